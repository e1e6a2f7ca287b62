"""Every file builder reads back — its own caches and records, and the files a user hands
it — is checked before use: hypothesis writes arbitrary JSON, mutated valid files and
random bytes into each, and builder either uses it, sets it aside (its own files:
renamed, never deleted, and rebuilt) or stops with exit 3 naming it (the user's files).
Never a traceback."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.util import history_records, records
from builder.util.runner import RecordingRunner
from tests.conftest import CliResult

FUZZ_N = int(os.environ.get("FUZZ_N", "0"))
SETTINGS = settings(max_examples=FUZZ_N or 60, deadline=None, derandomize=not FUZZ_N,
                    suppress_health_check=list(HealthCheck))
E2E = settings(max_examples=FUZZ_N // 10 or 3, deadline=None, derandomize=not FUZZ_N,
               suppress_health_check=list(HealthCheck))

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False), st.text(max_size=12),
                    st.sampled_from(["", "\0", "../..", "/etc/passwd", "1e999", "x" * 300]))
json_values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12)

#: a valid example of every kind of builder's own files, to mutate
VALID: dict[str, Any] = {
    "host.json": {"tool:cmake|/usr/bin/cmake|1:2|": {"version": "3.25.1", "archs": []},
                  "python|/usr/bin/python3|3:4|torch": {
                      "version": "3.11", "full": "3.11.2", "packages": [["torch", "2.13.0"]],
                      "purelib": "/usr/lib/python3/dist-packages",
                      "purelib_mtime": 1795456902553261392},
                  "dpkg-multiarch|/var/lib/dpkg/status|5:6|x": [["libx-dev", "1.0"]]},
    "memory-history.json": {"version": 1, "jobs": {"ab": {
        "file": "/src/a.cpp", "peak": 100, "seconds": 1.5, "cpu": 1.2, "when": 5.0,
        "runs": 2, "prev_peak": 99, "oom": False, "curve": [0.1, 0.5, 1.0],
        "cpus": [1.0, 1.2]}}},
    "step-times.json": {"greet/cpu-release/build": 1.5},
    "last-build.json": {"version": 1, "started": 1.0, "ended": 2.0, "interrupted": False,
                        "host": "h", "budget": 1000, "jobs_slots": 2, "counts": {},
                        "variants": [{"id": "greet/x", "status": "build", "reason": ""}],
                        "summary": {"done": 1, "cached": 0, "skipped": 0, "failed": 0,
                                    "aborted": 0, "failures": []},
                        "steps": [{"id": "greet/x/build", "status": "done", "start": 1.0,
                                   "end": 2.0, "seconds": 1.0, "kind": "build"}],
                        "compile_jobs": [{"file": "a.cpp", "t_start": 1.0, "t_end": 2.0,
                                          "peak": 5, "estimate": 6}]},
    "kernel-installs.json": {"/tmp/k/cuda": "ab" * 32},
    "digests.json": {"version": 1, "files": {"/x": [1, 2, 3, 4, "a" * 64]}},
}
READERS: dict[str, Callable[[Path], object]] = {
    "host.json": records.read_host_cache,
    "memory-history.json": history_records.read_history,
    "step-times.json": records.read_step_times,
    "last-build.json": records.read_last_build,
    "kernel-installs.json": records.read_kernel_installs,
    "digests.json": records.read_digest_cache,
}


def mutate(value: Any, path: list[int], replacement: Any) -> Any:
    """Replace one node of ``value`` (chosen by ``path``) with ``replacement``."""
    if not path or not isinstance(value, (dict, list)) or not value:
        return replacement
    if isinstance(value, dict):
        key = sorted(value)[path[0] % len(value)]
        return {**value, key: mutate(value[key], path[1:], replacement)}
    i = path[0] % len(value)
    return [*value[:i], mutate(value[i], path[1:], replacement), *value[i + 1:]]


contents = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
    st.sampled_from([b"\xff\xfe{}", b'{"a": NaN}', b"[" * 5000, b'{"a": 1e999}', b""]),
)


def mutated(name: str) -> st.SearchStrategy[bytes]:
    return st.builds(lambda p, r: json.dumps(mutate(VALID[name], p, r)).encode(),
                     st.lists(st.integers(0, 50), max_size=5), json_values)


@pytest.mark.parametrize("name", sorted(READERS))
def test_own_files_are_used_or_set_aside(name: str, tmp_path: Path) -> None:
    reader = READERS[name]

    @SETTINGS
    @given(data=st.one_of(contents, mutated(name)))
    def check(data: bytes) -> None:
        folder = tmp_path / "s"
        folder.mkdir(exist_ok=True)
        for p in folder.iterdir():
            p.unlink()
        path = folder / name
        path.write_bytes(data)
        value = reader(path)  # never raises
        left = sorted(p.name for p in folder.iterdir())
        if left == [name]:  # used as is: it was valid
            assert value == reader(path)
        else:  # set aside (renamed, the bytes kept) and read as empty
            assert left[0].startswith(f"{name}.damaged-") and len(left) == 1
            assert (folder / left[0]).read_bytes() == data
            assert not value

    check()


def test_valid_examples_are_used(tmp_path: Path) -> None:
    for name, reader in READERS.items():
        (tmp_path / name).write_text(json.dumps(VALID[name]))
        assert reader(tmp_path / name), name
        assert (tmp_path / name).exists()


def test_special_files_are_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "host.json"
    os.mkfifo(fifo)
    assert records.read_host_cache(fifo) == {}  # would block forever if opened
    lock = tmp_path / "lock.json"
    os.mkfifo(lock)
    with pytest.raises(records.InputFileError, match="not a regular file"):
        records.read_lockfile(lock, 1)


@pytest.fixture
def built(project: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> Path:
    state = tmp_path / "state"
    r = cli("--state-dir", str(state), "build", "greet", cwd=project, runner=RecordingRunner())
    assert r.code == 0, r.err
    return state


#: the commands that read each file
COMMANDS = {"host.json": [["plan", "greet"]],
            "memory-history.json": [["build", "greet", "-o", "loud=true"]],
            "step-times.json": [["build", "greet", "-o", "loud=true"]],
            "last-build.json": [["report", "--format", "json"], ["cache", "info"]],
            "kernel-installs.json": [["verify"], ["cache", "info"]],
            "digests.json": [["build", "greet"]]}


@pytest.mark.parametrize("name", sorted(VALID))
def test_commands_survive_a_damaged_state_file(name: str, project: Path, built: Path,
                                               cli: Callable[..., CliResult]) -> None:
    @E2E
    @given(data=st.one_of(contents, mutated(name)))
    def check(data: bytes) -> None:
        for command in COMMANDS[name]:
            (built / name).write_bytes(data)
            r = cli("--state-dir", str(built), *command, cwd=project, runner=RecordingRunner())
            assert r.code in (0, 1, 2), (command, r.err)
            assert "Traceback" not in r.err

    check()


def test_a_damaged_manifest_rebuilds(project: Path, built: Path,
                                     cli: Callable[..., CliResult]) -> None:
    mf = next((built / "install").glob("greet/*/manifest.json"))
    for bad in (b"[]", b'{"key": 1, "files": []}', b'{"key": "k", "files": [{"path": '
                b'"../../x", "size": 1, "sha256": "a"}]}', b"\xff"):
        mf.write_bytes(bad)
        r = cli("--state-dir", str(built), "build", "greet", cwd=project,
                runner=RecordingRunner())
        assert r.code == 0 and not r.out.startswith("nothing to do"), r.out + r.err


@pytest.mark.parametrize("kind", ["lockfile", "host-facts"])
def test_a_users_bad_file_is_exit_3_naming_it(kind: str, project: Path, tmp_path: Path,
                                              cli: Callable[..., CliResult]) -> None:
    @E2E
    @given(data=st.one_of(contents, st.builds(lambda p, r: json.dumps(mutate(
        {"version": 1, "host": "h", "variants": {"greet/cpu-release": {
            "version": "1.0.0", "archs": [], "options": {"loud": "False"},
            "pins": {"source": "x"}}}}, p, r)).encode(),
        st.lists(st.integers(0, 50), max_size=5), json_values)))
    def check(data: bytes) -> None:
        f = tmp_path / "input.json"
        f.write_bytes(data)
        args = ["build", "greet", "--lockfile", str(f)] if kind == "lockfile" else \
            ["plan", "greet", "--host-facts", str(f)]
        r = cli("--state-dir", str(tmp_path / "state"), *args, cwd=project,
                runner=RecordingRunner())
        assert "Traceback" not in r.err
        assert r.code in (0, 3, 4), r.err  # 4: a valid lockfile that differs
        if r.code == 3:
            assert str(f) in r.err

    check()
    for bad in (tmp_path, tmp_path / "missing.json"):
        args = ["build", "greet", "--lockfile", str(bad)] if kind == "lockfile" else \
            ["plan", "greet", "--host-facts", str(bad)]
        r = cli("--state-dir", str(tmp_path / "state"), *args, cwd=project,
                runner=RecordingRunner())
        assert r.code == 3 and str(bad) in r.err, r.err
