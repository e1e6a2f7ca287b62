from __future__ import annotations

import pytest

from builder.recipe.subst import SubstitutionError, is_known, substitute, variables


def test_substitute_replaces_known_values_only() -> None:
    assert substitute("${backend}/${kernel}/${arch}.${ext}",
                      {"backend": "cuda", "kernel": "k", "arch": "sm_80", "ext": "ptx"}) \
        == "cuda/k/sm_80.ptx"
    assert substitute("$${literal} ${a}", {"a": "x"}) == "${literal} x"
    with pytest.raises(SubstitutionError):  # never an empty string
        substitute("${env.MISSING}", {})
    assert substitute("${env.MISSING:-/opt/x}", {}) == "/opt/x"
    assert substitute("${env.SET:-/opt/x}", {"env.SET": "/y"}) == "/y"
    assert substitute("${env.EMPTY:-d}", {"env.EMPTY": ""}) == "d"  # as a shell's :-
    assert is_known("env.X:-a b") and not is_known("options.x:-a")
    with pytest.raises(SubstitutionError):
        substitute("${nope}", {})


def test_variables_and_known_names() -> None:
    assert variables("a ${x} $${y} ${options.z}") == ["x", "options.z"]
    assert is_known("archs.cmake") and is_known("options.foo") and is_known("env.HOME")
    assert not is_known("options.") and not is_known("archz")
