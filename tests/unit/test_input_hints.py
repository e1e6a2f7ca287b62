"""What a newcomer types wrong gets a hint that says what happened and the fix: sizes and
durations (one parser, any case, with or without a space), YAML's numbers that were meant
as versions (3.10 became 3.1), a key indented one level too deep under ``backends:``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builder.errors import RecipeError
from builder.recipe.recipeset import load_recipe
from builder.util.runner import RecordingRunner
from builder.util.units import parse_duration, parse_size
from tests.conftest import CliResult

HEAD = """\
package:
  name: demo
  version: "1.0"
source:
  path: ../src
"""


def problems(tmp_path: Path, text: str) -> str:
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "src").mkdir(exist_ok=True)
    p = tmp_path / "recipes" / "demo.yaml"
    p.write_text(HEAD + text)
    with pytest.raises(RecipeError) as e:
        load_recipe(p)
    return e.value.render()


@pytest.mark.parametrize(("text", "size"), [
    ("6G", 6 * 2**30), ("6g", 6 * 2**30), ("6GiB", 6 * 2**30), ("6 gib", 6 * 2**30),
    ("6Gi", 6 * 2**30), ("6GB", 6 * 10**9), ("6gb", 6 * 10**9), ("6 GB", 6 * 10**9),
    ("800MiB", 800 * 2**20), ("1.5GiB", 3 * 2**29), ("0", 0), ("512K", 512 * 2**10)])
def test_sizes_as_people_write_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(("text", "hint"), [("lots", "e.g. 6GiB"), ("6", "has no unit"),
                                            ("6 parsecs", "unknown size unit"),
                                            ("-1G", "e.g. 6GiB")])
def test_a_bad_size_says_what_a_size_is(text: str, hint: str) -> None:
    with pytest.raises(ValueError, match=hint):
        parse_size(text)


def test_durations() -> None:
    assert parse_duration("10min") == 600 == parse_duration("10 m")
    assert parse_duration("30 days") == 30 * 86400 and parse_duration("2w") == 14 * 86400
    with pytest.raises(ValueError, match="30d, 12h"):
        parse_duration("soon")


def test_the_command_line_takes_the_same_sizes(project: Path, tmp_path: Path,
                                               cli: Callable[..., CliResult]) -> None:
    state = str(tmp_path / "s")
    for size in ("6G", "6gb", "6 GB"):
        r = cli("--state-dir", state, "plan", "greet", "--memory-budget", size, cwd=project,
                runner=RecordingRunner())
        assert r.code == 0, r.err
    r = cli("--state-dir", state, "cache", "prune", "--max-size", "0", "--dry-run",
            cwd=project)
    assert r.code == 0, r.err


def test_a_recipe_takes_the_same_sizes_and_hints_a_bad_one(tmp_path: Path) -> None:
    text = problems(tmp_path, "backends:\n  cpu: {}\nmemory:\n  default: lots\n"
                              "  per_file:\n    'a/*.cpp': 6G\n")
    assert "memory.default: 'lots'" in text and "hint: not a size: 'lots'" in text, text
    assert "per_file" not in text  # 6G is a size


def test_a_timeout_in_minutes_is_told_its_seconds(tmp_path: Path) -> None:
    text = problems(tmp_path, "backends:\n  cpu: {}\ntest:\n  - name: t\n    run: [x]\n"
                              "    timeout: 10min\n")
    assert "hint: give seconds as a whole number: timeout: 600" in text, text


def test_a_version_yaml_read_as_a_float_says_what_it_became(tmp_path: Path) -> None:
    text = problems(tmp_path, "backends:\n  cpu: {}\npython:\n  versions: [3.9, 3.10]\n")
    assert 'hint: quote it: "3.9" (YAML reads it as a number)' in text, text
    assert 'hint: quote it: "3.10" (YAML reads 3.10 as the number 3.1)' in text, text


@pytest.mark.parametrize("cpu", ["cpu: {}", "cpu:"])
def test_a_misindented_defines_is_not_told_to_become_a_backend(tmp_path: Path,
                                                               cpu: str) -> None:
    text = problems(tmp_path, f"backends:\n  {cpu}\n  defines:\n    FOO: 1\n")
    assert "`defines:` is indented under `backends:`" in text, text
    assert "move `defines:` left to the top level" in text
    assert "kind" not in text and "FOO" not in text, text  # not "needs a `kind`"
