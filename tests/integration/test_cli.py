"""The CLI end to end, with a runner that records commands instead of running them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from builder.plan.model import BuildPlan
from builder.util.runner import RecordingRunner
from builder.workspace.lock import workspace_lock
from builder.workspace.paths import Workspace
from tests.conftest import FIXTURES, REPO


def test_build_runs_the_phases_in_order(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    runner = RecordingRunner()
    r = cli("build", "app", cwd=project, runner=runner)
    assert r.code == 0, r.err
    # the build runs under the memory cgroup wrapper where one can be created
    tools = [" ".join(c.argv[c.argv.index("--") + 1:][:2]) if "builder.memory.cgroup" in c.argv
             else Path(c.argv[0]).name + " " + c.argv[1] for c in runner.calls]
    tools = [t.split(" ", 1)[0].rsplit("/", 1)[-1] + " " + t.split(" ", 1)[1] for t in tools]
    one = ["conan install", "cmake -S", "cmake --build", "cmake --install"]
    # app, a dependent, forgets the package folders its cache holds (cmake -U *_DIR)
    dependent = ["conan install", "cmake -U", "cmake --build", "cmake --install"]
    assert tools == [*one, "conan export-pkg", *dependent, "app tester", "conan export-pkg"]
    assert runner.calls[0].env_changes["CONAN_HOME"] == str(project / ".builder" / "conan")
    assert "done: 15 step(s) run" in r.out and "variants: 2 built" in r.out
    # the summary says where the results went
    outputs = r.out.split("\noutputs:\n", 1)[1].splitlines()
    assert any(x.startswith("  app/cpu-release-") and ": .builder/install/app/cpu-release-" in x
               for x in outputs), r.out
    # generated files really written, Conan home without remotes
    conanfiles = list((project / ".builder" / "build").glob("*/*/conan/conanfile.py"))
    assert len(conanfiles) == 2
    remotes = json.loads((project / ".builder" / "conan" / "remotes.json").read_text())
    assert remotes == {"remotes": []}
    # a second build finds everything published and runs nothing
    again = RecordingRunner()
    r2 = cli("build", "app", cwd=project, runner=again)
    assert r2.code == 0 and again.calls == []
    assert r2.out.startswith("nothing to do: 2 variant(s) up to date")
    assert len(r2.out.splitlines()) == 1, r2.out  # one line; the details with -v
    r3 = cli("build", "app", "-v", "--skip-unsupported", "-b", "cpu", cwd=project,
             runner=again)
    assert r3.code == 0 and r3.out.startswith("nothing to do: 2 variant(s) up to date")


def test_build_names_each_skip_with_its_fix(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + "requires:\n  system:\n    - packages: "
                      "[no-such-pkg-a, no-such-pkg-b]\n      why: the demo\n")
    r = cli("build", "greet", "greetx", "--skip-unsupported", cwd=project,
            runner=RecordingRunner())
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith("  skipped greet/"))
    assert lines[i].endswith("system package(s) no-such-pkg-a, no-such-pkg-b not installed "
                             "(the demo)")
    assert lines[i + 1] == "      fix: apt-get install no-such-pkg-a no-such-pkg-b"
    assert lines[0].startswith("building: ") and "skipped" in lines[0]


def test_failure_reports_command_log_and_stops_dependents(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    runner = RecordingRunner(fail={"--build": 2})
    r = cli("build", "app", cwd=project, runner=runner)
    assert r.code == 1
    assert "error: step greet/" in r.err and "/build failed (exit code 2)" in r.err
    assert "command: " in r.err and "cmake --build" in r.err
    assert "log: " in r.err and ".builder/logs/greet_" in r.err
    assert "not run app/" in r.out
    assert not any("app" in c.argv[-1] for c in runner.calls if "--build" in c.argv)
    assert "3 step(s) run, 0 cached, 1 failed, 11 not run" in r.out
    assert "variants: 0 built, 2 failed" in r.out  # app is not run: its dependency failed


def test_keep_going_builds_independent_variants(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    runner = RecordingRunner(fail={"sources/app": 1})  # app's configure fails
    r = cli("build", "app", "vecadd", "--keep-going", cwd=project, runner=runner)
    assert r.code == 1
    assert any("vecadd" in " ".join(c.argv) for c in runner.calls)


def test_validate_reports_locations_and_exit_code(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    bad = project / "recipes" / "greet.yaml"
    bad.write_text(bad.read_text().replace('version: "1.0.0"', "version: 1.0").replace(
        "backends:", "backend:"))
    r = cli("validate", cwd=project)
    assert r.code == 3
    assert "recipes/greet.yaml:3:12: package.version: expected string" in r.err
    assert "unknown key 'backend'" in r.err and "did you mean 'backends'?" in r.err
    assert "Traceback" not in r.err


def test_validate_ok(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    r = cli("validate", cwd=project)
    assert r.code == 0 and "6 recipe(s) valid." in r.out


def test_plan_formats(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    facts = str(FIXTURES / "hosts" / "macos-m2.json")
    r = cli("plan", "app", "vecadd", "--host-facts", facts, "--format", "json", cwd=project)
    assert r.code == 0, r.err
    plan = BuildPlan.from_json(json.loads(r.out))
    assert {v.recipe: v.status for v in plan.variants} == {"greet": "build", "app": "build",
                                                           "vecadd": "skip"}
    t = cli("plan", "vecadd", "--host-facts", facts, cwd=project)
    assert "skip: cuda: CUDA is not available on macOS" in t.out
    assert "$ /opt/homebrew/bin/cmake -S" in t.out
    d = cli("plan", "app", "--format", "dot", "--host-facts", facts, cwd=project)
    assert d.out.startswith("digraph plan {") and "->" in d.out
    assert not (project / ".builder" / "build").exists(), "planning must write no files"


def test_plan_all_covers_the_python_matrix(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + 'python:\n  versions: ["3.11", "3.12"]\n'
                      "  abi: cpython\n")
    facts = str(FIXTURES / "hosts" / "linux-cuda13.json")
    r = cli("plan", "--all", "--format", "json", "--host-facts", facts, cwd=project)
    plan = BuildPlan.from_json(json.loads(r.out))
    assert sorted(v.python for v in plan.variants if v.recipe == "greet") == ["3.11", "3.12"]


def test_usage_errors(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    r = cli("plan", "gret", cwd=project)
    assert r.code == 2 and "unknown recipe 'gret' — did you mean 'greet'?" in r.err
    r = cli("plan", "greet", "-o", "volume=3", cwd=project)
    assert r.code == 2 and "no selected recipe has an option 'volume'" in r.err
    r = cli("plan", cwd=project)
    assert r.code == 2 and "name a recipe or pass --all" in r.err
    r = cli("build", "vecadd", "--backend", "cpu", cwd=project)
    assert r.code == 2 and "has no backend cpu" in r.err


def test_explicit_backend_that_cannot_build_is_an_error(project: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDACXX", "")
    r = cli("build", "vecadd", "--backend", "cuda", cwd=project, runner=RecordingRunner())
    assert r.code == 4
    assert "cannot build vecadd/" in r.err and "fix:" in r.err


def test_recipe_by_path_anywhere(tmp_path: Path, project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    r = cli("plan", str(project / "recipes" / "greet.yaml"), "--no-commands", cwd=project)
    assert r.code == 0 and "greet 1.0.0" in r.out


def test_locked_workspace_no_wait(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ws = Workspace.at(project)
    code = (f"import sys,time; sys.path.insert(0, {str(REPO)!r});"
            "from pathlib import Path; from builder.workspace.lock import workspace_lock;"
            "from builder.workspace.paths import Workspace;"
            f"ctx = workspace_lock(Workspace.at(Path({str(project)!r})));"
            "ctx.__enter__(); print('locked', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        r = cli("build", "greet", "--no-wait", cwd=project, runner=RecordingRunner())
        assert r.code == 5 and "in use by builder" in r.err
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    with workspace_lock(ws, wait=False):  # released when its holder died
        pass


def test_cli_module_entry_point_help() -> None:
    out = subprocess.run([sys.executable, "-m", "builder", "build", "--help"], check=True,
                         capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    assert "--keep-going" in out and "--memory-budget" in out


def test_named_recipe_that_cannot_build_here_is_an_error(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + "requires:\n  python: ['nosuchpkg>=1']\n")
    r = cli("build", "greet", cwd=project, runner=RecordingRunner())
    assert r.code == 4
    assert "cannot build greet/" in r.err and "nosuchpkg is not installed for Python" in r.err
    assert "fix: " in r.err and "pip install 'nosuchpkg>=1'" in r.err


def test_a_noop_build_is_one_line_unless_verbose(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    first = cli("build", "greetx", "--skip-unsupported", cwd=project, runner=RecordingRunner())
    assert first.code == 0, first.err
    again = cli("build", "greetx", "--skip-unsupported", cwd=project, runner=RecordingRunner())
    assert again.code == 0, again.err
    [line] = again.out.splitlines()
    assert line.startswith("nothing to do: ") and " skipped (" in line and \
        "-v for why" in line, again.out
    verbose = cli("build", "greetx", "--skip-unsupported", "-v", cwd=project,
                  runner=RecordingRunner())
    assert "  skipped greetx/macos-release-" in verbose.out, verbose.out


def test_a_drifted_source_pin_names_its_files(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A lockfile lists each local source folder's files: building a drifted tree against
    it names the files that changed, appeared or went away (builder.workspace.pins)."""
    lock = project / "builder.lock"
    assert cli("lock", "app", "--output", str(lock), cwd=project).code == 0
    greet = project / "sources" / "greet"
    locked = json.loads(lock.read_text())["sources"][str(greet)]
    assert set(locked) >= {"src/greet.cpp", "include/greet/greet.h", "CMakeLists.txt"}
    cpp = greet / "src" / "greet.cpp"
    cpp.write_text(cpp.read_text() + "// edited\n")
    (greet / "src" / "new.cpp").write_text("")
    (greet / "include" / "greet" / "greet.h").unlink()
    r = cli("build", "app", "--lockfile", str(lock), cwd=project, runner=RecordingRunner())
    assert r.code == 4, r.out + r.err
    assert (f"greet/cpu-release: source {greet}: src/greet.cpp changed, src/new.cpp added, "
            f"include/greet/greet.h removed") in r.err, r.err
    assert f"source {project / 'sources' / 'app'}" not in r.err  # app's folder is as locked
