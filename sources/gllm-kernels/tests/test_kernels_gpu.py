"""GPU correctness: every kernel x dtype (x causal x head dim for attention)
against an fp32 torch reference, using artifacts from the artifact root
($GLLM_KERNELS_ROOT, else ~/.gsc/gllm/kernels). Builds nothing: run
scripts/build.sh (or the builder) first. Skips, with the reason, when there is
no CUDA GPU, no cupy, or no artifact for a kernel on this GPU.

    GLLM_KERNELS_ROOT=/path/to/root pytest -v -s tests/test_kernels_gpu.py
"""

import pytest

import _gllm_cases as C

CASES = C.cases()


@pytest.fixture(scope="module")
def gpu():
    why = C.environment_problem()
    if why:
        pytest.skip(why)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_reference(gpu, case):
    why = C.artifact_problem(case.kernel)
    if why:
        pytest.skip(why)
    err = C.run_case(case)
    print(f"{case.kernel:10s} {case.variant:32s} {case.dtype:8s} max_abs_err={err:.3e} "
          f"tol={case.tol:.0e}")
    assert err <= case.tol, f"max abs error {err:.3e} > {case.tol:.0e}"



def test_launches_on_torch_current_stream(gpu):
    # torch inputs must be launched on torch's current stream, or the kernel
    # could race the work that produced its inputs on a side stream.
    why = C.artifact_problem("rms_norm")
    if why:
        pytest.skip(why)
    import cupy
    import torch
    from gllm_kernels import _cuda, reference
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert _cuda._torch_stream(cupy, side, 0).ptr == side.cuda_stream
        x = torch.randn(64, 4096, device="cuda") * 3 + 1  # queued on `side`
        w = torch.rand(4096, device="cuda")
        y = C.gk.rms_norm(x, w)
        err = (y - reference.rms_norm(x, w)).abs().max().item()
    side.synchronize()
    assert err <= 1e-4
