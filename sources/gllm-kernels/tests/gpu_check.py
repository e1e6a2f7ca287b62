#!/usr/bin/env python3
"""Run every kernel comparison on the local GPU and print a table.

Compiles nothing: loads the artifacts from $GLLM_KERNELS_ROOT (else
~/.gsc/gllm/kernels). Exit status 0 only if every case ran and passed;
1 on any failure, error, or missing GPU/cupy/artifact.

    GLLM_KERNELS_ROOT=/path/to/root python tests/gpu_check.py
"""

import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _gllm_cases as C  # noqa: E402


def main():
    why = C.environment_problem()
    if why:
        print(f"gpu_check: cannot run: {why}")
        return 1
    import torch
    import gllm_kernels as gk
    from gllm_kernels import _cuda

    major, minor = torch.cuda.get_device_capability(0)
    print(f"device: {torch.cuda.get_device_name(0)} (sm_{major}{minor}); "
          f"root: {gk.artifact_root()}")
    missing = {k: C.artifact_problem(k) for k in gk.KERNELS}
    rows, failed = [], 0
    for case in C.cases():
        if missing[case.kernel]:
            rows.append((case, None, "NO ARTIFACT"))
            failed += 1
            continue
        try:
            err = C.run_case(case)
            ok = err <= case.tol
            rows.append((case, err, "pass" if ok else "FAIL"))
            failed += not ok
        except Exception as e:  # report and keep going: one table for everything
            traceback.print_exc()
            rows.append((case, None, f"ERROR {type(e).__name__}"))
            failed += 1

    for k in gk.KERNELS:
        art = _cuda.loaded_artifact(k, 0)
        print(f"  {k:10s} <- {art.path if art else missing[k]}")
    print()
    print(f"{'kernel':10s}  {'variant':32s}  {'dtype':8s}  {'max abs err':>11s}  {'tol':>7s}  result")
    print("-" * 86)
    for case, err, res in rows:
        e = f"{err:.3e}" if err is not None else "-"
        print(f"{case.kernel:10s}  {case.variant:32s}  {case.dtype:8s}  {e:>11s}  "
              f"{case.tol:7.0e}  {res}")
    print("-" * 86)
    print(f"{len(rows) - failed}/{len(rows)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
