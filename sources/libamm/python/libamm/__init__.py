"""libamm: approximate matrix multiplication (AMM) on the PyTorch C++ API.

    >>> import torch, libamm
    >>> A, B = torch.randn(256, 1024), torch.randn(1024, 128)
    >>> C = libamm.amm(A, B, "count_sketch", sketch_size=256, seed=0)
    >>> libamm.list()
    ['block_lra', 'cooccurring_fd', 'count_sketch', 'crs', 'exact', ...]

`import torch` comes first on purpose: it loads libtorch, libc10 and
libtorch_python into the process, and the dynamic loader then satisfies the
extension's DT_NEEDED entries for them by soname. The extension's RUNPATH
also lists torch's lib directory (absolute, from the build) and
$ORIGIN/../../lib (for libamm.so), so this works either way; importing torch
first is what keeps an installed tree usable after torch moves (e.g. a new
virtualenv with the same torch version).
"""

import torch  # noqa: F401  -- must precede the extension import, see above

from . import _libamm
from ._libamm import Algorithm, AmmParams, KnobInfo, create, has, relative_frobenius_error

__version__ = _libamm.__version__
__all__ = [
    "Algorithm",
    "AmmParams",
    "KnobInfo",
    "amm",
    "create",
    "has",
    "list",
    "relative_frobenius_error",
]


def amm(A, B, algorithm="exact", *, sketch_size=64, seed=42, **knobs):
    """Approximate A @ B with the named algorithm.

    Algorithm-specific options are passed as keyword arguments (e.g.
    ``uniform=1`` for ``crs``, ``subspace_dim=8`` for ``pq``); unknown ones
    raise. See ``libamm.create(name).knobs()``.
    """
    return _libamm.amm(algorithm, A, B, sketch_size=sketch_size, seed=seed,
                       knobs={k: float(v) for k, v in knobs.items()})


def list():  # noqa: A001 -- mirrors libamm::list() in C++
    """Sorted names of the registered algorithms."""
    return _libamm.list()
