"""fusedops: fused transformer ops as a torch C++/CUDA extension, built the way
flash-attention, xformers and vLLM build theirs: setup.py with torch.utils.cpp_extension
(Ninja inside; MAX_JOBS parallel compiles; TORCH_CUDA_ARCH_LIST picks the GPU archs).

    FUSEDOPS_BACKEND=cpu  pip wheel --no-build-isolation .     # CppExtension
    FUSEDOPS_BACKEND=cuda pip wheel --no-build-isolation .     # CUDAExtension (+ .cu kernels)

torch must already be installed in the building interpreter (hence --no-build-isolation;
build isolation would install an unpinned torch from the index).
"""

import os
from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

HERE = Path(__file__).parent
backend = os.environ.get("FUSEDOPS_BACKEND", "cpu")
if backend not in ("cpu", "cuda"):
    raise SystemExit(f"FUSEDOPS_BACKEND={backend!r}: expected cpu or cuda")

# every host TU includes <torch/extension.h>: ~1.5 GB and ~20 s of gcc each
sources = [f"csrc/{n}.cpp" for n in ("bindings", "rmsnorm", "swiglu", "rotary")]
cxx_flags = ["-O2", "-g0", "-std=c++17"]
if backend == "cuda":
    sources += [f"csrc/cuda/{n}.cu" for n in ("rmsnorm_kernel", "swiglu_kernel")]
    ext = CUDAExtension("fusedops._C", sources,
                        define_macros=[("FUSEDOPS_CUDA", "1")],
                        extra_compile_args={"cxx": cxx_flags, "nvcc": ["-O2", "-std=c++17"]})
else:
    ext = CppExtension("fusedops._C", sources, extra_compile_args={"cxx": cxx_flags})

setup(
    name="fusedops",
    version="0.1.0",
    description="Fused RMSNorm, SwiGLU and rotary embedding for PyTorch (C++/CUDA extension)",
    package_dir={"": "src"},
    packages=["fusedops"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExtension},  # Ninja; MAX_JOBS compiles at once
    python_requires=">=3.9",
)
