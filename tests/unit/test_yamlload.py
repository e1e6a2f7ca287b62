from __future__ import annotations

import time

import pytest

from builder.errors import RecipeError
from builder.recipe.yamlload import load_text


def test_yaml_1_2_scalars_and_positions() -> None:
    data, pos = load_text("a: yes\nb: 1.2\nc: [on, 0x10, '3', ~]\nd:\n  e: true\n", "t.yaml")
    assert data == {"a": "yes", "b": 1.2, "c": ["on", 16, "3", None], "d": {"e": True}}
    assert pos.values[("c", 2)] == (3, 15)
    assert pos.keys[("d", "e")] == (5, 3)
    assert str(pos.location(("d", "e", "missing"))) == "t.yaml:5:6"


def test_duplicate_key_names_both_lines() -> None:
    with pytest.raises(RecipeError) as e:
        load_text("a: 1\nb: 2\na: 3\n", "t.yaml")
    text = e.value.render()
    assert "t.yaml:3:1: a: duplicate key 'a' (first defined on line 1)" in text


def test_tab_indentation_is_located() -> None:
    with pytest.raises(RecipeError) as e:
        load_text("a:\n\t- b\n", "t.yaml")
    assert "t.yaml:2:1" in e.value.render() and "tab" in e.value.render()


def test_syntax_error_has_location() -> None:
    with pytest.raises(RecipeError) as e:
        load_text("a: [1, 2\nb: 3\n", "t.yaml")
    assert e.value.diagnostics[0].location.line >= 2
    assert "YAML syntax error" in e.value.render()


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    start = time.monotonic()
    with pytest.raises(RecipeError) as e:
        load_text("\n".join(lines) + "\n", "bomb.yaml")
    # expanded, its 10**9 nodes would take hours; a loaded machine takes seconds
    assert time.monotonic() - start < 10.0
    assert "alias bomb" in e.value.render()


def test_merge_keys_are_refused() -> None:
    with pytest.raises(RecipeError) as e:
        load_text("base: &b {x: 1}\nc:\n  <<: *b\n", "t.yaml")
    assert "merge keys" in e.value.render()


def test_small_aliases_are_fine() -> None:
    data, _ = load_text("x: &v [1, 2]\ny: *v\n", "t.yaml")
    assert data == {"x": [1, 2], "y": [1, 2]}
