"""Recipe validation: every problem located, with a hint, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.recipe.recipeset import RecipeSet, load_recipe

GOOD = """\
package:
  name: demo
  version: "1.0"
source:
  path: src
backends:
  cpu: {}
"""


def write(tmp_path: Path, text: str, name: str = "demo.yaml") -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    p = tmp_path / "recipes" / name
    p.parent.mkdir(exist_ok=True)
    p.write_text(text)
    return p


def problems(tmp_path: Path, text: str) -> str:
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "src").mkdir(exist_ok=True)
    p = tmp_path / "recipes" / "demo.yaml"
    p.write_text(text.replace("path: src", "path: ../src"))
    with pytest.raises(RecipeError) as e:
        load_recipe(p)
    return e.value.render()


def test_good_recipe_builds_the_model(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace("path: src", "path: ../src"))
    r = load_recipe(p)
    assert (r.name, r.version, r.backend_names, r.build_system) == ("demo", "1.0", ("cpu",),
                                                                     "cmake")
    assert r.sources[0].location == str((tmp_path / "src").resolve())


def test_float_version_gets_a_quote_hint(tmp_path: Path) -> None:
    out = problems(tmp_path, GOOD.replace('version: "1.0"', "version: 1.2"))
    assert "demo.yaml:3:12: package.version: expected string, got a number" in out
    assert 'hint: quote the version: version: "1.2"' in out


def test_misspelt_key_did_you_mean(tmp_path: Path) -> None:
    out = problems(tmp_path, GOOD + "optoins: {}\n")
    assert "demo.yaml:8:1: optoins: unknown key 'optoins'" in out
    assert "did you mean 'options'?" in out


def test_unknown_backend_did_you_mean(tmp_path: Path) -> None:
    out = problems(tmp_path, GOOD.replace("cpu: {}", "cuad: {}"))
    assert "backends.cuad: unknown name 'cuad'" in out and "did you mean 'cuda'?" in out


def test_several_errors_reported_together(tmp_path: Path) -> None:
    text = GOOD.replace("cpu: {}", "cuda:\n    archs: [sm_80, gfx1030]\n    tools: {nvcc: '>>12'}")
    text += "options:\n  mode:\n    type: str\n    default: fast\n    allowed: [slow, safe]\n"
    out = problems(tmp_path, text)
    assert "backends.cuda.archs[1]: 'gfx1030' is not a cuda architecture (it is a rocm one)" \
        in out
    assert "hint: move it to backends.rocm.archs" in out
    assert "invalid version specifier '>>12'" in out
    assert "options.mode.default: default 'fast' is not one of the allowed values" in out
    assert out.rstrip().endswith("3 errors found.")


def test_unknown_substitution_and_unknown_option_reference(tmp_path: Path) -> None:
    text = GOOD + "defines:\n  A: ${archz}\n  B: ${options.nope}\n"
    out = problems(tmp_path, text)
    assert "defines.A: unknown substitution ${archz}" in out
    assert "defines.B: ${options.nope} names an option that does not exist" in out


def test_kernel_without_source_for_declared_backend(tmp_path: Path) -> None:
    text = GOOD.replace("cpu: {}", "cuda: {archs: [sm_80]}\n  rocm: {archs: [gfx1030]}")
    text += "build: {system: kernels}\nkernels:\n  k:\n    sources: {cuda: k.cu}\n"
    out = problems(tmp_path, text)
    assert "kernel 'k' has no source for the declared backend 'rocm'" in out


def test_path_source_cannot_escape_project(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    out = problems(tmp_path, GOOD.replace("path: src", "path: ../../../etc"))
    assert "leaves the recipe's project" in out


def test_git_source_needs_full_commit(tmp_path: Path) -> None:
    out = problems(tmp_path, GOOD.replace("path: src", "git: https://example.invalid/x.git\n"
                                                       "  rev: main"))
    assert "source.rev: rev 'main' is not a full commit id" in out


def test_source_needs_one_kind(tmp_path: Path) -> None:
    out = problems(tmp_path, GOOD.replace("path: src", "url: https://example.invalid/x.tgz"))
    assert "a source needs exactly one of" in out


def test_not_a_mapping(tmp_path: Path) -> None:
    out = problems(tmp_path, "- just\n- a list\n")
    assert "a recipe must be a mapping, got a list" in out


def _set(tmp_path: Path, texts: dict[str, str]) -> None:
    (tmp_path / "src").mkdir(exist_ok=True)
    rd = tmp_path / "recipes"
    rd.mkdir(exist_ok=True)
    for name, body in texts.items():
        (rd / f"{name}.yaml").write_text(
            GOOD.replace("name: demo", f"name: {name}").replace("path: src", "path: ../src")
            + body)


def test_unknown_required_recipe_and_version_conflict(tmp_path: Path) -> None:
    _set(tmp_path, {"a": "requires:\n  recipes:\n"
                         "    - {name: bb}\n    - {name: c, version: '>=2'}\n",
                    "b": "", "c": ""})
    with pytest.raises(RecipeError) as e:
        RecipeSet.load(tmp_path / "recipes")
    out = e.value.render()
    assert "requires unknown recipe 'bb'" in out and "did you mean 'b'?" in out
    assert "requires c>=2 but " in out and "c.yaml has version 1.0" in out


def test_dependency_cycle_is_printed(tmp_path: Path) -> None:
    _set(tmp_path, {"a": "requires: {recipes: [{name: b}]}\n",
                    "b": "requires: {recipes: [{name: c}]}\n",
                    "c": "requires: {recipes: [{name: a}]}\n"})
    with pytest.raises(RecipeError) as e:
        RecipeSet.load(tmp_path / "recipes")
    assert "dependency cycle: a → b → c → a" in e.value.render()


def test_conan_reference_conflict(tmp_path: Path) -> None:
    _set(tmp_path, {"a": "requires: {conan: [protobuf/3.21.12]}\n",
                    "b": "requires: {conan: [protobuf/3.20.0]}\n"})
    with pytest.raises(RecipeError) as e:
        RecipeSet.load(tmp_path / "recipes")
    assert "version conflict: protobuf/3.20.0 here, protobuf/3.21.12" in e.value.render()


def test_wheel_and_abi3_settings_are_checked(tmp_path: Path) -> None:
    text = problems(tmp_path, GOOD + 'python:\n  versions: ["3.9", "3.12"]\n  abi: abi3\n'
                    '  limited_api: "3.10"\nwheel:\n  requires: ["numpy >>> 1"]\n')
    assert "limited_api 3.10 is above Python 3.9" in text and 'limited_api: "3.9"' in text
    assert "wheel.requires[0]: invalid requirement 'numpy >>> 1'" in text
    text = problems(tmp_path, GOOD + 'wheel:\n  manylinux: manylinux_2_28_x86_64\n')
    assert ":9:14: wheel.manylinux" in text  # a policy is named without its arch
    text = problems(tmp_path, GOOD + 'python:\n  versions: ["3.11"]\n  limited_api: "3.11"\n')
    assert "limited_api applies to abi: abi3 only" in text


def test_abi3_recipe_loads_with_its_floor(tmp_path: Path) -> None:
    r = load_recipe(write(tmp_path, GOOD.replace("path: src", "path: ../src") +
                          'python:\n  versions: ["3.10", "3.9"]\n  abi: abi3\n'
                          'wheel:\n  manylinux: manylinux_2_28\n  exclude: [libfoo.so.*]\n'))
    assert r.python.abi3_floor == "3.9" and not r.python.per_python
    assert r.wheel.manylinux == "manylinux_2_28" and r.wheel.exclude == ("libfoo.so.*",)


def test_schema_and_semantic_errors_in_one_round(tmp_path: Path) -> None:
    out = problems(tmp_path, GOOD.replace('version: "1.0"', "version: 1.0").replace(
        "path: src", "path: nowhere") + "options:\n  x: {type: bool, default: maybe}\n")
    assert "expected string, got a number" in out  # the schema's
    assert "nowhere" in out  # the source folder check, in the same round


def test_file_errors_and_set_errors_in_one_round(tmp_path: Path) -> None:
    """A broken file does not hide a duplicate name or a misspelt requirement elsewhere, and
    a requirement on the broken file's recipe is not called unknown."""
    _set(tmp_path, {"a": "requires:\n  recipes:\n    - {name: bb}\n    - {name: broken}\n",
                    "b": "", "dup": ""})
    rd = tmp_path / "recipes"
    (rd / "dup2.yaml").write_text((rd / "dup.yaml").read_text())
    (rd / "broken.yaml").write_text((rd / "b.yaml").read_text().replace(
        "name: b", "name: broken").replace('"1.0"', "1.0"))
    with pytest.raises(RecipeError) as e:
        RecipeSet.load(rd)
    out = e.value.render()
    assert "broken.yaml:3:12: package.version: expected string" in out
    assert "recipe name 'dup' is also used by" in out
    assert "requires unknown recipe 'bb'" in out
    assert "unknown recipe 'broken'" not in out
