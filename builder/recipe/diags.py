"""Collect recipe problems as :class:`~builder.errors.Diagnostic` values.

Shared by the schema pass (:mod:`builder.recipe.validate`) and the semantic pass
(:mod:`builder.recipe.semantic`): a problem is recorded against its path in the YAML
document (``("backends", "cuda", "archs", 3)``), which becomes the file, line
and column through :class:`~builder.recipe.yamlload.Positions`, with a hint on how to
fix it — "did you mean" for a misspelt name.
"""

from __future__ import annotations

import difflib

from builder.errors import Diagnostic
from builder.recipe.yamlload import PathKey, Positions, format_path

__all__ = ["Diags", "did_you_mean"]


class Diags:
    def __init__(self, pos: Positions) -> None:
        self.pos = pos
        self.items: list[Diagnostic] = []

    def add(self, path: PathKey, message: str, hint: str = "", *, key: bool = False) -> None:
        loc = self.pos.location(path, key=key)
        self.items.append(Diagnostic(loc, format_path(path), message, hint,
                                     self.pos.line_text(loc.line)))


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""
