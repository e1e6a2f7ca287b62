"""nvcc's shape (threads × archs) and the priors it scales."""

from __future__ import annotations

import pytest

from builder.memory.estimate import estimate, nvcc_shape, prior

EXT = ("torch/extension.h",)


@pytest.mark.parametrize(("argv", "shape"), [
    (["nvcc", "-c", "k.cu"], (1, 1)),  # nvcc's default arch
    (["g++", "-O2", "-c", "a.cpp"], (1, 1)),
    (["nvcc", "-arch=sm_80", "-c", "k.cu"], (1, 1)),
    (["nvcc", "-arch", "sm_90a", "--threads", "4", "-c", "k.cu"], (4, 1)),
    (["nvcc", "--gpu-architecture=compute_80", "-code=sm_80,sm_86", "-t2"], (2, 1)),
    # CMake's form, one flag per CMAKE_CUDA_ARCHITECTURES entry
    (["nvcc", *(f"--generate-code=arch=compute_{a},code=[compute_{a},sm_{a}]"
                for a in (80, 86, 89, 90)), "--threads=2", "-c", "k.cu"], (2, 4)),
    # torch.utils.cpp_extension's form; one virtual arch compiled for two real ones
    (["nvcc", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
      "arch=compute_80,code=sm_86", "-gencode", "arch=compute_90,code=sm_90", "-t", "8"],
     (8, 2)),
    (["nvcc", "-gencode=arch=compute_75,code=sm_75", "--threads", "0"], (1, 1)),
    (["nvcc", *(f"-gencode=arch=compute_{a},code=sm_{a}" for a in (80, 90)), "-t0"], (2, 2)),
    (["nvcc", "-arch=all-major", "-t", "3"], (3, 6)),
    (["nvcc", "-arch=sm_80", "-arch=native"], (1, 1)),  # the last -arch wins
    (["nvcc", "--threads", "x", "-c", "k.cu"], (1, 1)),
])
def test_nvcc_shape(argv: list[str], shape: tuple[int, int]) -> None:
    assert nvcc_shape(argv) == shape


def test_nvcc_prior_by_archs_and_threads() -> None:
    one = prior(EXT, cuda=True)
    assert one.source == "prior:torch/extension.h"
    # threads beyond the archs do nothing: one cicc at a time
    assert prior(EXT, cuda=True, nvcc_threads=4).peak == one.peak
    # archs beyond the threads wait: the peak stays, the CPU time grows per arch
    four = prior(EXT, cuda=True, nvcc_threads=1, nvcc_archs=4)
    assert four.peak == one.peak and four.seconds > 3 * one.seconds
    two = prior(EXT, cuda=True, nvcc_threads=2, nvcc_archs=4)
    assert one.peak < two.peak <= 2 * one.peak and two.seconds == four.seconds
    assert prior(EXT, cuda=True, nvcc_threads=4, nvcc_archs=4).peak > two.peak
    assert two.reserve > two.peak
    # host compiles and headers without nvcc figures ignore the shape
    host = prior(EXT, cuda=False, nvcc_threads=4, nvcc_archs=4)
    assert host.peak == prior(EXT, cuda=False).peak
    assert prior(("pybind11/pybind11.h",), cuda=True, nvcc_archs=4).peak == \
        prior(("pybind11/pybind11.h",), cuda=False).peak
    # a TU with no known header: the default's nvcc figures, scaled the same way
    d1, d2 = prior((), cuda=True), prior((), cuda=True, nvcc_threads=2, nvcc_archs=2)
    assert d1.source == d2.source == "default" and d1.peak < d2.peak


def test_groups_and_families_name_the_shape() -> None:
    cu = estimate("csrc/a.cu", EXT, nvcc_threads=2, nvcc_archs=4)
    assert cu.group == cu.family == "prior:torch/extension.h:device:2x4"
    other = estimate("csrc/b.cu", EXT, nvcc_threads=2, nvcc_archs=2)
    assert other.group != cu.group  # two archs at a time over 2 or 4: different jobs
    host = estimate("csrc/b.cpp", EXT, nvcc_threads=1, nvcc_archs=4)
    assert host.group == "prior:torch/extension.h:host:1"
    rec = estimate("csrc/a.cu", EXT, recipe_globs=(("csrc/*.cu", 5 << 30),),
                   nvcc_threads=2, nvcc_archs=4)
    assert rec.family == "prior:torch/extension.h:device:2x4" and rec.peak == 5 << 30


def test_a_device_compile_is_timed_only_by_its_own_measured_curve() -> None:
    """nvcc's cicc peaks come early (one per arch): the generic ramp would under-bound them,
    the job's measured curve (a running maximum) does not."""
    from builder.memory.estimate import estimate, learned

    curve = tuple([0.9] * 19 + [1.0])  # the first cicc already near the peak
    with_curve = {"peak": 3 * 2**30, "cpu": 60.0, "curve": curve, "runs": 1}
    without = {"peak": 3 * 2**30, "cpu": 60.0, "runs": 1}
    timed = estimate("k.cu", ("torch/extension.h",), history=with_curve)
    assert timed.cpu == 60.0 and timed.curve == curve
    assert estimate("k.cu", ("torch/extension.h",), history=without).cpu == 0.0
    assert estimate("k.cpp", ("torch/extension.h",), history=without).cpu == 60.0
    cold = estimate("k.cu", ("torch/extension.h",))
    assert learned(cold, 3 * 2**30, 60.0, curve).cpu == 60.0
    assert learned(cold, 3 * 2**30, 60.0, ()).cpu == 0.0  # no curve: its peak, held
