"""Vector kernels from a C++ core (built by CMake through scikit-build-core)."""

from vecmath._vecmath import __version__, axpy, dot, norm2, unrolled

__all__ = ["__version__", "axpy", "dot", "norm2", "unrolled"]
