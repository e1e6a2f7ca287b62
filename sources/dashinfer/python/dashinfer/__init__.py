"""DashInfer: tiny transformer inference engine (CPU/OpenMP and CUDA).

    import dashinfer
    path = dashinfer.make_random_model("/tmp/m.pb", {"num_layers": 2}, seed=7)
    eng = dashinfer.Engine(path, platform="cpu")     # or Engine({...config...}, seed=7)
    eng.generate([1, 2, 3], max_new_tokens=8)        # -> list[int]
    print(eng.profile_table())                       # needs AS_PROFILE=ON + DASHINFER_PROFILE build

The compiled module `_dashinfer` lives next to this file; it finds
libdashinfer.so through its RUNPATH ($ORIGIN/../../lib in the install tree).
"""
from ._dashinfer import (  # noqa: F401
    Engine,
    __version__,
    build_info,
    cuda_available,
    cuda_compiled,
    cuda_device_count,
    default_config,
    load_config,
    load_weights,
    make_random_model,
    profile_compiled,
    version,
)


def profile_table(engine):
    """Operator profiling table of `engine` (same as engine.profile_table())."""
    return engine.profile_table()


__all__ = [
    "Engine", "build_info", "cuda_available", "cuda_compiled", "cuda_device_count",
    "default_config", "load_config", "load_weights", "make_random_model", "profile_compiled",
    "profile_table", "version", "__version__",
]
