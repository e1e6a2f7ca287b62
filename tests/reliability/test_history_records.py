"""``memory-history.json`` is checked record by record against what builder writes: a
record it could not have written (a negative or huge peak, a curve outside [0, 1]) is left
out with a note and the others are kept; whatever is kept, the estimates, the admission
policy's forecast, ``builder plan`` and ``builder build`` use without an exception."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.memory.estimate import estimate
from builder.memory.forecast import simulate
from builder.memory.history import History
from builder.util import history_records
from builder.util.runner import RecordingRunner
from tests.conftest import CliResult

FUZZ_N = int(os.environ.get("FUZZ_N", "0"))
SETTINGS = settings(max_examples=FUZZ_N or 150, deadline=None, derandomize=not FUZZ_N,
                    suppress_health_check=list(HealthCheck))

GOOD = {"file": "greet:src/greet.cpp", "peak": 200_000_000, "seconds": 2.0, "cpu": 1.8,
        "when": 5.0, "runs": 2, "prev_peak": 199_000_000, "oom": False,
        "curve": [0.2, 0.6, 1.0, 0.4], "prev_curve": [0.2, 0.5, 1.0, 0.3],
        "cpus": [1.7, 1.8]}


def _write(path: Path, jobs: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "jobs": jobs}), encoding="utf-8")


def _use(rec: dict[str, Any]) -> None:
    """Everything builder does with a history record: both estimates (host and device
    compiles), and the forecast that runs the admission policy over them."""
    jobs = []
    for n, name in enumerate(("a.cpp", "k.cu")):
        for est in (estimate(name, (), history=rec), estimate(name, (), history_file=rec)):
            jobs.append((f"{n}{est.source}", est.reserve, est.seconds, est.cpu, est.curve))
    simulate(jobs, 4 * 2**30, 2)


@pytest.mark.parametrize("bad", [{"curve": [-1.0, -2.0, -3.0]}, {"curve": [0.5, 7.0]},
                                 {"prev_curve": [-0.5]}, {"peak": -5}, {"peak": 2**61},
                                 {"prev_peak": -1}, {"runs": 0}, {"seconds": -3.0},
                                 {"cpus": [-1.0]}, {"file": ""}, {"curve": [0.1] * 5000}])
def test_a_damaged_record_is_left_out_and_the_rest_kept(tmp_path: Path, bad: dict[str, Any],
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    path = tmp_path / "memory-history.json"
    _write(path, {"good": GOOD, "bad": {**GOOD, **bad}})
    jobs = History(path).jobs
    assert list(jobs) == ["good"]
    err = capsys.readouterr().err
    assert "left out 1 damaged record(s)" in err and "jobs.bad" in err, err
    assert path.exists()  # the good records are not set aside with the bad one


def test_a_negative_curve_never_reaches_plan_or_build(project: Path, tmp_path: Path,
                                                      cli: Callable[..., CliResult]) -> None:
    """The issue's example: a curve of negative numbers was an IndexError in the
    admission policy of `builder plan` and `builder build`."""
    state = tmp_path / "s"
    assert cli("--state-dir", str(state), "plan", "greet", cwd=project).code == 0
    _write(state / "memory-history.json",
           {"k": {**GOOD, "curve": [-1.0, -2.0, -3.0], "prev_curve": [-4.0, -5.0, -6.0]}})
    r = cli("--state-dir", str(state), "plan", "greet", cwd=project, runner=RecordingRunner())
    assert r.code == 0 and "damaged record" in r.err, r.err
    r = cli("--state-dir", str(state), "build", "greet", cwd=project, runner=RecordingRunner())
    assert r.code in (0, 1) and "Traceback" not in r.err, r.err


finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), finite,
                   st.text(max_size=6), st.lists(st.one_of(finite, st.integers(-9, 9),
                                                           st.none(), st.text(max_size=2)),
                                                 max_size=12),
                   st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
records_ = st.dictionaries(st.sampled_from(sorted(GOOD)), values, max_size=len(GOOD)).map(
    lambda d: {**GOOD, **d})
anything = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), finite,
                                  st.text(max_size=6)),
                        lambda kids: st.one_of(st.lists(kids, max_size=4),
                                               st.dictionaries(st.text(max_size=6), kids,
                                                               max_size=4)), max_leaves=16)


@SETTINGS
@given(jobs=st.dictionaries(st.text(max_size=4), st.one_of(records_, anything), max_size=4))
def test_any_history_is_read_and_used_without_an_exception(tmp_path_factory: Any,
                                                           jobs: dict[str, Any]) -> None:
    path = tmp_path_factory.mktemp("h") / "memory-history.json"
    _write(path, jobs)
    for rec in History(path).jobs.values():
        _use(rec)


@SETTINGS
@given(data=anything)
def test_any_json_as_the_history_is_no_exception(tmp_path_factory: Any, data: Any) -> None:
    path = tmp_path_factory.mktemp("h") / "memory-history.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    for rec in history_records.read_history(path).values():
        _use(rec)
