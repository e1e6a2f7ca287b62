"""What a command asks the resolver for: which backends, Pythons, build types and option
values, and the build-wide settings (memory budget, jobs, caches, remotes)."""

from __future__ import annotations

from dataclasses import dataclass

from builder.host.facts import HostFacts
from builder.memory.remote import Pool
from builder.plan.model import DistPool, PoolServer

__all__ = ["MIN_RESERVE", "OptionOverride", "Request", "dist_pool", "memory_budget"]

#: besides the compile jobs and their launchers (which the broker counts): builder, cmake,
#: ninja and the cgroup helper (~45 MB anonymous, measured), page tables, slack
MIN_RESERVE = 128 * 2**20


@dataclass(frozen=True)
class OptionOverride:
    recipe: str  # "" = every selected recipe that has the option
    name: str
    value: str



@dataclass(frozen=True)
class Request:
    backends: tuple[str, ...] = ()  # empty: every backend each recipe declares
    pythons: tuple[str, ...] = ()  # empty: the default Python; ("all",): every supported one
    build_types: tuple[str, ...] = ()  # empty: each recipe's first build type
    options: tuple[OptionOverride, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # the environment variables the plan may use
    skip_unsupported: bool = False
    memory_budget: int = 0  # bytes; 0: derived from the host
    jobs: int = 0  # 0: the host's CPUs
    run_tests: bool = True
    conan_remote: str = ""  # a configured Conan remote for `provider: remote` requirements
    compiler_cache: str = ""  # none | ccache | sccache; "": the recipe's default, else none
    cache_remote: str = ""  # remote storage for the compiler cache, e.g. redis://127.0.0.1:6379
    remote: str = ""  # a Conan remote holding published variants (download, not build)
    #: the pass-through variables (``--env NAME``, ``BUILDER_PASS_ENV``) that are set, with
    #: their values: every step gets them and they enter the compile key (resolve.stepenv)
    pass_env: tuple[tuple[str, str], ...] = ()
    #: ``--secret-env NAME``: variables the steps that build and test get from the shell
    #: when they start — names only, never values, never keyed (resolve.secretenv)
    secret_env: tuple[str, ...] = ()
    #: where builder itself is imported from when its interpreter does not have it (a
    #: checkout on PYTHONPATH): its compiler launchers in the steps need it; "" otherwise
    own_pythonpath: str = ""
    wheel_variants: bool = False  # also one variant wheel per GPU arch (PEP 825)
    #: the distributed pool the build compiles on (``--dist`` with its declared servers):
    #: the forecast gives it the jobs that fit its slots; never keyed, never in a step
    dist: Pool | None = None


def memory_budget(host: HostFacts, request: Request) -> int:
    """The bytes compile jobs may hold at once: asked for, or what the host can spare."""
    if request.memory_budget:
        return request.memory_budget
    usable = host.memory.usable()
    return max(usable - max(MIN_RESERVE, usable * 3 // 100), 0)


def dist_pool(request: Request) -> DistPool | None:
    """The plan's view of the pool the build compiles on: None without one, or with no
    server (nothing can go there)."""
    pool = request.dist
    if pool is None or not pool.servers:
        return None
    return DistPool(pool.scheduler, tuple(PoolServer(s.name, s.addr, s.cores, s.memory)
                                          for s in pool.servers))
