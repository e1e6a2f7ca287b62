"""Recipes are data: nothing from a recipe reaches a shell or an evaluator, values
stay single argv elements, and no path from a recipe escapes the project, the source
root or the install root."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from builder.errors import PlanError, RecipeError, UsageError
from builder.plan.model import BuildPlan
from builder.recipe.recipeset import RecipeSet, load_recipe
from builder.resolve.request import OptionOverride, Request
from builder.resolve.resolver import resolve
from builder.util.runner import SubprocessRunner
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import REPO, host

EVIL = "a b; rm -rf / $(touch PWNED) `touch PWNED` \"' && echo x > PWNED #"
#: a line break or NUL in an option value is refused up front (it would reach Conan's
#: option parser, CMake caches and logs as two lines)
MULTILINE = "a\n-o &:builder_key=x"

EVIL_RECIPE = """\
package:
  name: evil
  version: "1.0"
source:
  path: ../sources/greet
options:
  msg:
    type: str
    default: hi
    cmake: GREET_MSG
backends:
  cpu: {}
defines:
  GREET_TEXT: "${options.msg}"
test:
  - name: echo
    run: ["/bin/echo", "${options.msg}", "--", "x${options.msg}y"]
    env:
      GREET_ENV: "${options.msg}"
"""


def plan(project: Path, names: list[str], facts: str = "linux-cuda13",
         options: tuple[OptionOverride, ...] = ()) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(names, ws.recipes_dir)
    return resolve(roots, rs, Request(env=(("HOME", "/home/user"),), options=options),
                   host(facts), read_state(ws, rs.closure(roots)), ws)


def write(project: Path, name: str, text: str) -> Path:
    path = project / "recipes" / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# -- nothing through a shell or an evaluator ---------------------------------------------

def test_no_shell_and_no_eval_anywhere_in_builder() -> None:
    forbidden = {
        "shell=True": re.compile(r"shell\s*=\s*True"),
        "os.system": re.compile(r"\bos\.system\("),
        "os.popen": re.compile(r"\bos\.popen\("),
        "eval(": re.compile(r"(?<![\w.])eval\("),
        "exec(": re.compile(r"(?<![\w.])exec\("),
        "yaml.load( / unsafe loaders": re.compile(r"yaml\.(load|unsafe_load|full_load)\(|"
                                                  r"yaml\.(Unsafe|Full)?Loader\b"),
        "pickle": re.compile(r"\bimport pickle\b|\bpickle\.loads?\("),
    }
    found = []
    for path in sorted((REPO / "builder").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for what, rx in forbidden.items():
                if rx.search(line):
                    found.append(f"{path.relative_to(REPO)}:{n}: {what}: {line.strip()}")
    assert found == []


def test_option_values_stay_single_argv_elements(project: Path) -> None:
    write(project, "evil", EVIL_RECIPE)
    p = plan(project, ["evil"], options=(OptionOverride("", "msg", EVIL),))
    [v] = p.variants
    steps = {s.id.rsplit("/", 1)[1]: s for s in p.steps if s.variant == v.id}
    for s in steps.values():
        for argv in s.commands:
            assert isinstance(argv, tuple) and all(isinstance(a, str) for a in argv)
    configure = steps["configure"].commands[0]
    assert f"-DGREET_MSG={EVIL}" in configure and f"-DGREET_TEXT={EVIL}" in configure
    test = steps["test:echo"]
    assert test.commands == (("/bin/echo", EVIL, "--", f"x{EVIL}y"),)
    assert ("GREET_ENV", EVIL) in test.env
    # the generated conanfile is valid Python naming the option; its value reaches Conan
    # as one argv element of `conan install` / `conan export-pkg`, never through a file
    files = dict(steps["render"].payload.files)
    conanfile = next(t for f, t in files.items() if f.endswith("conanfile.py"))
    tree = ast.parse(conanfile)
    options = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                   if isinstance(node, ast.Assign) and
                   getattr(node.targets[0], "id", "") == "options")
    assert options["msg"] == ["ANY"] and EVIL not in conanfile
    for kind in ("conan-install", "export"):
        argv = steps[kind].commands[0]
        assert argv[argv.index(f"&:msg={EVIL}") - 1] == "-o"
    # and the plan round-trips through JSON unchanged (what `plan --format json` shows)
    assert BuildPlan.from_json(json.loads(json.dumps(p.to_json()))) == p
    with pytest.raises(UsageError, match="line break"):
        plan(project, ["evil"], options=(OptionOverride("", "msg", MULTILINE),))


def test_the_runner_never_uses_a_shell(tmp_path: Path) -> None:
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    res = SubprocessRunner().run(["/bin/echo", EVIL], cwd=tmp_path, env_changes={},
                                 log_path=tmp_path / "log", timeout=30)
    assert res.returncode == 0
    assert not (tmp_path / "PWNED").exists()
    assert EVIL.splitlines()[0] in (tmp_path / "log").read_text()


def test_a_trailing_newline_does_not_slip_through_a_pattern(project: Path) -> None:
    path = write(project, "nl", 'package: {name: "nl\\n", version: "1.0"}\n'
                 "source: {path: ../sources/greet}\nbackends: {cpu: {}}\n")
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    assert "package.name" in e.value.render()


# -- no escape from the project, the source root or the install root ---------------------

BASE = """\
package: {name: esc, version: "1.0"}
source:
  path: ../sources/greet
backends:
  cpu: {}
"""


@pytest.mark.parametrize(("text", "message"), [
    (BASE.replace("../sources/greet", "../../../../../../etc"), "leaves the recipe's project"),
    (BASE.replace("../sources/greet", "../sources/../../.."), "leaves the recipe's project"),
    (BASE.replace("  path: ../sources/greet", "  path: ../sources/greet\n  subdir: ../../x"),
     "'../../x' leaves the source root"),
    (BASE.replace("  path: ../sources/greet",
                  "  path: ../sources/greet\n  patches: [../../../etc/passwd]"),
     "is outside the recipe's project"),
    (BASE + "python: {package: ../../../etc}\n", "leaves the install prefix"),
])
def test_paths_from_a_recipe_cannot_leave_the_project(project: Path, text: str,
                                                      message: str) -> None:
    with pytest.raises(RecipeError) as e:
        load_recipe(write(project, "esc", text))
    assert message in e.value.render()


def test_a_symlink_out_of_the_project_is_refused(project: Path) -> None:
    (project / "sources" / "outside").symlink_to("/etc")
    with pytest.raises(RecipeError) as e:
        load_recipe(write(project, "esc", BASE.replace("greet", "outside")))
    assert "leaves the recipe's project" in e.value.render()


KERN = (REPO / "tests" / "fixtures" / "project" / "recipes" / "kern.yaml").read_text()


@pytest.mark.parametrize("layout", ["${backend}/../../etc/${kernel}.${ext}",
                                    "../${backend}/${kernel}/${arch}.${ext}",
                                    "/etc/${backend}/${kernel}.${ext}",
                                    "${kernel}/${arch}.${ext}"])
def test_install_layout_cannot_leave_the_install_root(project: Path, layout: str) -> None:
    path = write(project, "kern", KERN + f'  layout: "{layout}"\n')
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    assert "install.layout" in e.value.render()


def test_install_layout_from_an_option_cannot_leave_the_install_root(project: Path) -> None:
    text = KERN.replace("options:\n", "options:\n  sub:\n    type: str\n    default: k\n") + \
        '  layout: "${backend}/${options.sub}/${kernel}/${arch}.${ext}"\n'
    write(project, "kern", text)
    ok = plan(project, ["kern"])  # the default value is fine
    assert any(s.kind == "publish-kernels" for s in ok.steps)
    with pytest.raises(PlanError) as e:
        plan(project, ["kern"], options=(OptionOverride("", "sub", "../../../etc"),))
    assert "contains '..'" in str(e.value)


def test_kernel_sources_stay_below_the_source_root(project: Path) -> None:
    path = write(project, "kern", KERN.replace("cuda: scale.cu", "cuda: ../../../etc/passwd"))
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    assert "leaves the source root" in e.value.render()
