"""Which files a compile job compiles, by suffix: one table for the launcher (which command
is a compile job), the estimates (which compiler's prior) and the plan's forecast (which
sources of a project are compile jobs)."""

from __future__ import annotations

__all__ = ["CUDA_SUFFIXES", "DEVICE_SUFFIXES", "SOURCE_SUFFIXES"]

#: sources a compiler turns into an object file (C, C++, CUDA, HIP, Objective-C/C++)
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".hip", ".m", ".mm")
#: sources nvcc compiles
CUDA_SUFFIXES = (".cu",)
#: sources with device code: nvcc and hipcc run cicc/clang per arch, whose peaks come early
DEVICE_SUFFIXES = (".cu", ".hip")
