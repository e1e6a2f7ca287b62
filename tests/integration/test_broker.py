"""Broker + launcher with fake compilers: admission by reserved memory, OOM retry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from builder.memory import wire
from builder.memory.broker import Broker
from builder.memory.core import Scheduler, Switches
from builder.memory.estimate import Estimate
from builder.memory.jobs import JobRecord, Learned
from builder.memory.policy import Job
from builder.memory.running import Run
from builder.plan.payloads import MemoryConfig
from tests.conftest import REPO


@pytest.fixture(autouse=True)
def _owned(tmp_path: Path) -> None:
    """The broker saves its history through builder's writer, which writes only into
    folders builder owns: here, the test's folder."""
    (tmp_path / ".builder-state").write_text("")

FAKE_CC = """\
import sys, time
args = sys.argv[1:]
if "--oom-unless-g0" in args and "-g0" not in args:
    sys.stderr.write("g++: fatal error: Killed signal terminated program cc1plus\\n")
    sys.exit(1)
blob = bytearray(40 * 2**20)  # 40 MiB, so that the launcher measures something
time.sleep(0.6)
"""


def _broker(tmp_path: Path, budget: int, glob_size: int, learn: bool = False,
            globs: tuple[str, ...] = ("*.cpp",)) -> Broker:
    b = Broker(tmp_path / "b.sock", MemoryConfig(
        budget=budget, slots=4, source_root=str(tmp_path), build_dir=str(tmp_path / "build"),
        history_path=str(tmp_path / "history.json"),
        recipe_globs=tuple((g, glob_size) for g in globs),
        lowmem_flags=("-g0", "-O1"), recipe_default=0), Switches(learn=learn))
    b.start()
    return b


def _launch(tmp_path: Path, broker: Broker, name: str, *extra: str,
            text: str = "int x;\n") -> subprocess.Popen[bytes]:
    src = tmp_path / name
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    (tmp_path / "cc.py").write_text(FAKE_CC)
    env = {**os.environ, "BUILDER_BROKER": str(broker.path), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "builder.memory.launcher", sys.executable,
                             str(tmp_path / "cc.py"), *extra, "-c", str(src)], env=env,
                            stderr=subprocess.PIPE)


def _run_all(tmp_path: Path, broker: Broker, names: list[str], stagger: float = 0.0,
             text: str = "int x;\n") -> None:
    """Launch one fake compile per name (``stagger`` seconds apart), wait for all."""
    try:
        procs = []
        for name in names:
            procs.append(_launch(tmp_path, broker, name, text=text))
            time.sleep(stagger)
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
    finally:
        broker.stop()


def _most_at_once(jobs: list[dict[str, object]]) -> int:
    events = sorted([(float(str(j["started"])), 1) for j in jobs] +
                    [(float(str(j["ended"])), -1) for j in jobs])
    running = peak = 0
    for _, d in events:
        running += d
        peak = max(peak, running)
    return peak


def test_reserved_memory_limits_concurrency(tmp_path: Path) -> None:
    broker = _broker(tmp_path, budget=10**9, glob_size=400 * 10**6)  # reserve 460 MB each
    _run_all(tmp_path, broker, [f"t{i}.cpp" for i in range(5)])
    jobs = broker.report()
    assert len(jobs) == 5
    assert _most_at_once(jobs) == 2  # 3 × 460 MB would pass the 1 GB budget
    assert all(j["peak"] > 30 * 2**20 for j in jobs)  # the launcher measured the child
    history = json.loads((tmp_path / "history.json").read_text())["jobs"]
    assert len(history) == 5


def test_a_failing_policy_costs_time_never_a_stall(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a bug in admission (here: it raises from the third call on) must not leave the
    # launchers waiting for a grant that never comes: the rest run one at a time
    import builder.memory.core as broker_module

    calls = []
    real = broker_module.admit

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 2:
            raise ZeroDivisionError("a policy bug")
        return real(*args, **kwargs)

    monkeypatch.setattr(broker_module, "admit", failing)
    broker = _broker(tmp_path, budget=10**10, glob_size=100 * 10**6)
    _run_all(tmp_path, broker, [f"t{i}.cpp" for i in range(6)], stagger=0.1)
    jobs = broker.report()
    assert len(jobs) == 6 and all(j["rc"] == 0 for j in jobs)
    assert broker.failure == "ZeroDivisionError: a policy bug"
    late = [j for j in jobs if j["started"] > min(float(k["ended"]) for k in jobs)]
    assert late and _most_at_once(late) == 1, jobs  # after the failure: one at a time


def test_the_broker_threads_end_cleanly_whatever_comes(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # a build with nothing to compile stops its broker at once (its accept thread may
    # first run after the socket is closed); a connection may send what is no message
    import socket
    import threading

    errors: list[str] = []
    monkeypatch.setattr(threading, "excepthook",
                        lambda a: errors.append(f"{a.thread}: {a.exc_type}: {a.exc_value}"))
    for _ in range(30):
        broker = _broker(tmp_path, budget=10**9, glob_size=100 * 10**6)
        broker.stop()
        # its accept thread has ended (a closed socket alone left it blocked for good)
        assert not [t for t in threading.enumerate() if t.name.endswith("(_accept)")]
    broker = _broker(tmp_path, budget=10**9, glob_size=100 * 10**6)
    for junk in (b"[1, 2]\n", b"not json\n", b"\"acquire\"\n", b"\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(broker.path))
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            assert s.recv(100) == b""  # the broker hung up: nothing granted, nothing stuck
    _run_all(tmp_path, broker, ["ok.cpp"])  # and it still serves launchers
    assert [j["rc"] for j in broker.report()] == [0]
    assert broker.failure == "" and errors == []


def test_a_cold_build_learns_from_the_first_jobs_of_a_glob(tmp_path: Path) -> None:
    # the recipe says 400 MB per TU (460 MB reserved: 2 fit in 1 GB); the fake compilers
    # measure ~50 MB, so once two have finished the rest are re-estimated from them
    broker = _broker(tmp_path, budget=10**9, glob_size=400 * 10**6, learn=True)
    _run_all(tmp_path, broker, [f"t{i}.cpp" for i in range(8)], stagger=0.05)  # arrival order
    jobs = broker.report()
    sources = [str(j["source"]) for j in jobs]
    assert sources[:2] == ["recipe", "recipe"]
    learned = [j for j in jobs if str(j["source"]).startswith("learned:recipe:*.cpp")]
    assert len(learned) >= 4
    measured = {int(str(j["peak"])) for j in jobs}
    for j in learned:  # a measured sibling's peak (or what a running one holds, if more)
        est = int(str(j["estimate"]))  # plus the learned margin: 7 %, 3 % once two agree
        assert est >= min(measured) and any(abs(est - m) <= 0.02 * m for m in measured)
        assert int(str(j["reserve"])) in (int(est * 1.07), int(est * 1.03))
    assert _most_at_once(jobs) > 2  # more than the recipe value allowed


def test_an_implausibly_light_header_sibling_does_not_lower_a_glob(tmp_path: Path) -> None:
    # two recipe globs of torch TUs: b/ would learn from a/'s measurements through their
    # umbrella header until one of its own finishes — but a "torch TU" measured at ~50 MB
    # (the fake compiler) is far below what such TUs need (0.6 × the torch/torch.h prior):
    # b/ keeps its recipe estimate (jobs.plausible; the pure cases are in
    # tests/unit/test_cmake_projects.py)
    broker = _broker(tmp_path, budget=10**9, glob_size=400 * 10**6, learn=True,
                     globs=("a/*.cpp", "b/*.cpp"))
    _run_all(tmp_path, broker, ["a/1.cpp", "a/2.cpp", "b/1.cpp", "b/2.cpp", "b/3.cpp"],
             stagger=0.05, text="#include <torch/torch.h>\n")
    jobs = broker.report()
    by_file = {str(j["file"]): j for j in jobs}
    assert by_file["a/1.cpp"]["source"] == "recipe"
    assert by_file["b/1.cpp"]["family"] == "prior:torch/torch.h:host:1"
    assert not [j for j in jobs if j["source"] == "learned:prior:torch/torch.h:host:1"]


def test_oom_kill_is_retried_alone_with_lowmem_flags(tmp_path: Path) -> None:
    broker = _broker(tmp_path, budget=10**9, glob_size=100 * 10**6)
    try:
        p = _launch(tmp_path, broker, "big.cpp", "--oom-unless-g0")
        _, err = p.communicate(timeout=60)
    finally:
        broker.stop()
    assert p.returncode == 0, err
    assert b"retrying alone with the low-memory flags" in err
    first, second = broker.report()
    assert first["oom"] and not first["retry"]
    assert second["retry"] and second["lowmem"] and second["rc"] == 0


def test_without_broker_the_launcher_just_runs_the_compiler(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "builder.memory.launcher", sys.executable,
                          "-c", "print('ran')"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO), "BUILDER_BROKER": ""},
                         check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ran"


FAKE_BUSY = """\
import sys, time
args = sys.argv[1:]
cpu = float(next(a[6:] for a in args if a.startswith("--cpu=")))
mib = int(next(a[6:] for a in args if a.startswith("--mib=")))
blob = []
t0 = time.process_time()
while (used := time.process_time() - t0) < cpu:  # CPU work; memory grows with it
    while len(blob) < int(mib * used / cpu):
        blob.append(bytearray(2**20))
"""


def _busy(tmp_path: Path, broker: Broker, name: str, cpu: float, mib: int
          ) -> tuple[subprocess.Popen[bytes], list[str]]:
    src = tmp_path / name
    src.write_text("int x;\n")
    (tmp_path / "busy.py").write_text(FAKE_BUSY)
    argv = [sys.executable, str(tmp_path / "busy.py"), f"--cpu={cpu}", f"--mib={mib}", "-c",
            str(src)]
    env = {**os.environ, "BUILDER_BROKER": str(broker.path), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "builder.memory.launcher", *argv], env=env,
                            stderr=subprocess.PIPE), argv


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_pause_stops_the_compiler_and_resume_continues_it(tmp_path: Path) -> None:
    b = Broker(tmp_path / "b.sock", MemoryConfig(
        budget=10**9, slots=2, source_root=str(tmp_path), build_dir=str(tmp_path / "build"),
        history_path=str(tmp_path / "history.json"), recipe_globs=(("*.cpp", 10**8),),
        recipe_default=0, lowmem_flags=()),
        Switches(pause=False))  # the test pauses by hand
    b.start()
    try:
        p, _ = _busy(tmp_path, b, "p.cpp", cpu=2.0, mib=20)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with b.cond:
                live = next(iter(b.core.running.values()), None)
                if live is not None and live.rec.id in b.links and \
                        b.links[live.rec.id].granted and live.cpu is not None:
                    break
            time.sleep(0.05)
        assert live is not None and live.cpu is not None  # progress was reported
        kids = [int(x) for x in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text()
                .split()]
        [compiler] = kids
        b.links[live.rec.id].send(wire.Pause())
        time.sleep(0.5)
        assert _state(compiler) == "T"
        cpu = live.cpu
        time.sleep(0.8)
        assert live.cpu is not None and live.cpu - cpu < 0.1  # stopped: no CPU time used
        b.links[live.rec.id].send(wire.Resume())
        time.sleep(0.3)
        assert _state(compiler) in "RS"
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    finally:
        b.stop()
    [job] = b.report()
    assert job["cpu"] >= 1.9 and job["paused"] >= 0.5
    [rec] = json.loads((tmp_path / "history.json").read_text())["jobs"].values()
    assert rec["cpu"] >= 1.9


def test_time_model_starts_a_job_before_the_other_ends(tmp_path: Path) -> None:
    """Two compiles measured before (history: peak and CPU time) whose peaks do not fit
    together: the second starts while the first, predicted to end soon, still runs."""
    from builder.memory.history import History, flags_hash, job_key

    peak, cpu = 60 * 2**20, 3.0
    build = str(tmp_path / "build")
    history = History(tmp_path / "history.json")
    for name in ("a.cpp", "b.cpp"):
        argv = [sys.executable, str(tmp_path / "busy.py"), f"--cpu={cpu}", "--mib=50", "-c",
                str(tmp_path / name)]
        history.record(job_key(str(tmp_path / name), flags_hash(argv, build), argv[0]),
                       str(tmp_path / name), peak, cpu, cpu=cpu)
    history.save()
    reserve = int(peak * 1.05)
    # room for one peak and 0.9 of another, besides the two launchers
    budget = 2 * 10 * 2**20 + reserve + int(0.9 * reserve)
    b = Broker(tmp_path / "b.sock", MemoryConfig(
        budget=budget, slots=2, source_root=str(tmp_path), build_dir=build,
        history_path=str(tmp_path / "history.json"),
        recipe_default=0, recipe_globs=(), lowmem_flags=()))
    b.start()
    try:
        first, _ = _busy(tmp_path, b, "a.cpp", cpu, 50)
        time.sleep(0.5)
        second, _ = _busy(tmp_path, b, "b.cpp", cpu, 50)
        for p in (first, second):
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        b.stop()
    a, c = sorted(b.report(), key=lambda j: j["started"])
    assert a["source"] == "history" and a["model_cpu"] == cpu
    assert c["started"] < a["ended"]  # overlapped: peak reservation would have waited
    assert c["started"] > a["started"] + 0.5  # but not from the start: they would not fit


def test_a_compiler_cache_hit_is_not_recorded_as_a_measurement(tmp_path: Path) -> None:
    """A hit runs no compiler: its few MB say nothing about the compile, and recorded they
    would let the next miss start next to anything."""
    cache = tmp_path / "ccache"
    cache.write_text(f"#!{sys.executable}\nimport time\nb = bytearray(20 * 2**20)\n"
                     "time.sleep(0.6)\n")  # a hit: some work, but no compiler below
    cache.chmod(0o755)
    b = _broker(tmp_path, budget=10**9, glob_size=100 * 10**6)
    try:
        src = tmp_path / "hit.cpp"
        src.write_text("int x;\n")
        env = {**os.environ, "BUILDER_BROKER": str(b.path), "PYTHONPATH": str(REPO)}
        p = subprocess.run([sys.executable, "-m", "builder.memory.launcher", str(cache), "g++",
                            "-c", str(src)], env=env, capture_output=True, check=False,
                           timeout=60)
        assert p.returncode == 0, p.stderr
    finally:
        b.stop()
    [job] = b.report()
    assert job["rc"] == 0 and job["peak"] > 10 * 2**20  # measured, …
    assert json.loads((tmp_path / "history.json").read_text())["jobs"] == {}  # … not kept


def test_learning_counts_what_running_siblings_hold(tmp_path: Path) -> None:
    """The first sibling to finish may be the lightest: a waiting job's learned peak is at
    least what a sibling still running holds (a cold libamm build learned 1.07 GB from
    exact.cpp while its siblings peaked at 1.2 GB)."""
    broker = Scheduler(10**10, 4)
    group = "recipe:src/*.cpp:host"
    est = Estimate(1_400_000_000, 10.0, "recipe", 1_610_000_000, group=group)

    def waiting_after(running_rss: int) -> JobRecord:
        broker.records = [JobRecord("1:src/b.cpp", "src/b.cpp", est.peak, est.reserve,
                                    "recipe", 0.0, group=group),
                          JobRecord("2:src/c.cpp", "src/c.cpp", est.peak, est.reserve,
                                    "recipe", 0.0, group=group)]
        broker.waiting = [Job("2:src/c.cpp", est.reserve, 2)]
        broker._by_id = {r.id: r for r in broker.records}
        broker.estimates = {"2:src/c.cpp": est}
        broker.running = {"1:src/b.cpp": Run(broker.records[0], 0.0, 1, 0.0,
                                              rss=running_rss)}
        broker.learned = {group: Learned().add(1_000_000_000, 8.0, ())}
        broker._learn(0.0)
        return broker.records[1]

    alone = waiting_after(500_000_000)  # the sibling holds less: the measured peak rules
    assert (alone.estimate, alone.reserve) == (1_000_000_000, 1_070_000_000)
    held = waiting_after(1_200_000_000)
    assert (held.estimate, held.reserve) == (1_200_000_000, int(1_200_000_000 * 1.07))
    assert broker.waiting[0].estimate == held.reserve
    # two siblings measured alike: the smaller margin, unless a running one holds more
    broker.learned = {group: Learned().add(1_000_000_000, 8.0, ()).add(990_000_000, 9.0, ())}
    assert broker.learned[group].agreed
    broker.waiting = [Job("2:src/c.cpp", est.reserve, 2)]
    broker.running = {}
    broker._learn(0.0)
    assert broker.records[1].reserve == 1_030_000_000
    assert not Learned().add(1_000_000_000, 8.0, ()).add(900_000_000, 9.0, ()).agreed
