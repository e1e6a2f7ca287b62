"""Load YAML into plain data while keeping where every value came from.

PyYAML's composer (libyaml when available) gives nodes with start marks; we turn
them into dicts, lists and scalars ourselves so that:

* plain scalars follow YAML 1.2's core schema (``yes``/``on`` stay strings,
  ``1.2`` is a float — the validator rejects a float version with a hint);
* duplicate keys are errors, not silent overwrites;
* alias expansion is bounded (a "billion laughs" document is refused quickly);
* every key and value has a ``(line, col)`` in :class:`Positions`.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from builder.errors import Diagnostic, Location, RecipeError

__all__ = ["MAX_DEPTH", "MAX_NODES", "PathKey", "Positions", "format_path", "line_col",
           "load_text", "read_text"]

try:  # libyaml is ~10× faster; fall back to the pure-Python composer.
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

#: Most nodes a document may expand to (aliases included).
MAX_NODES = 200_000
#: Deepest nesting of lists and mappings (a recipe needs fewer than ten levels).
MAX_DEPTH = 100

PathKey = tuple[str | int, ...]

_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_SPECIAL_FLOAT = {".inf": float("inf"), "+.inf": float("inf"), "-.inf": float("-inf"),
                  ".nan": float("nan")}


@dataclass
class Positions:
    """Where each value (and each mapping key) of a document starts."""

    file: str
    lines: list[str] = field(default_factory=list)
    values: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    keys: dict[PathKey, tuple[int, int]] = field(default_factory=dict)

    def location(self, path: PathKey, *, key: bool = False) -> Location:
        """The closest known position for ``path`` (walking up to its parents)."""
        table = self.keys if key else self.values
        p = tuple(path)
        while True:
            if p in table:
                line, col = table[p]
                return Location(self.file, line, col)
            if p in self.values:
                line, col = self.values[p]
                return Location(self.file, line, col)
            if not p:
                return Location(self.file)
            p = p[:-1]

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""


def format_path(path: PathKey) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _scalar(node: yaml.ScalarNode) -> Any:
    if node.style:  # quoted or block scalar: always a string
        return node.value
    v = node.value
    if v in ("", "~", "null", "Null", "NULL"):
        return None
    if v in ("true", "True", "TRUE"):
        return True
    if v in ("false", "False", "FALSE"):
        return False
    if _INT.match(v):
        return int(v, 0) if v.startswith(("0o", "0x")) else int(v)
    if _FLOAT.match(v):
        return float(v)
    if v.lower() in _SPECIAL_FLOAT:
        return _SPECIAL_FLOAT[v.lower()]
    return v


class _Builder:
    def __init__(self, pos: Positions) -> None:
        self.pos = pos
        self.count = 0
        self.errors: list[Diagnostic] = []
        self.active: set[int] = set()  # the collections being built, to spot a cycle

    def _loc(self, node: yaml.Node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def build(self, node: yaml.Node, path: PathKey) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise RecipeError([Diagnostic(Location(self.pos.file, *self._loc(node)), "",
                                          f"document expands to more than {MAX_NODES} nodes",
                                          "this looks like an alias bomb; remove the "
                                          "nested aliases")])
        self.pos.values.setdefault(path, self._loc(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                return _scalar(node)
            except ValueError:  # an integer of more than 4300 digits
                self.errors.append(self._diag(node, path, "number too large",
                                              "quote it if it is meant as a string"))
                return None
        if len(path) >= MAX_DEPTH:
            raise RecipeError([self._diag(node, path, f"nested more than {MAX_DEPTH} levels "
                                          f"deep", "a recipe needs only a few levels; "
                                          "check the brackets and the indentation")])
        if id(node) in self.active:
            raise RecipeError([self._diag(node, path, "an alias refers to a value that "
                                          "contains it (a recursive alias)",
                                          "YAML aliases must not form a cycle")])
        self.active.add(id(node))
        try:
            return self._collection(node, path)
        finally:
            self.active.discard(id(node))

    def _collection(self, node: yaml.Node, path: PathKey) -> Any:
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":
                    self.errors.append(self._diag(knode, path, "merge keys (<<) are not "
                                                  "supported", "write the keys out, or use "
                                                  "an alias for a whole value"))
                    continue
                if not isinstance(knode, yaml.ScalarNode):
                    self.errors.append(self._diag(knode, path, "a mapping key must be a "
                                                  "plain string", "quote the key"))
                    continue
                key = str(knode.value)
                if key in out:
                    first = self.pos.keys.get((*path, key), (0, 0))
                    self.errors.append(self._diag(
                        knode, (*path, key), f"duplicate key '{key}' (first defined on "
                        f"line {first[0]})", "remove one of the two"))
                    continue
                self.pos.keys[(*path, key)] = self._loc(knode)
                out[key] = self.build(vnode, (*path, key))
            return out
        raise AssertionError(f"unknown YAML node {node!r}")  # pragma: no cover

    def _diag(self, node: yaml.Node, path: PathKey, msg: str, hint: str) -> Diagnostic:
        line, col = self._loc(node)
        return Diagnostic(Location(self.pos.file, line, col), format_path(path), msg, hint,
                          self.pos.line_text(line))


def _code(character: object) -> int:
    return ord(character) if isinstance(character, str) and len(character) == 1 else \
        int(character) if isinstance(character, int) else 0


def line_col(text: str | bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    if isinstance(text, bytes):
        return line_col(text[:offset].decode("utf-8", errors="replace"),
                        len(text[:offset].decode("utf-8", errors="replace")))
    start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - start + 1


def load_text(text: str, file: str) -> tuple[Any, Positions]:
    """Parse ``text`` (named ``file`` in messages) into data and positions."""
    pos = Positions(file=file, lines=text.splitlines())
    if "\t" in text:
        for i, line in enumerate(pos.lines, 1):
            indent = line[: len(line) - len(line.lstrip())]
            if "\t" in indent:
                raise RecipeError([Diagnostic(Location(file, i, indent.index("\t") + 1), "",
                                              "a tab is used for indentation",
                                              "YAML indents with spaces only; replace "
                                              "the tab with spaces", line)])
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        lineno, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        raise RecipeError([Diagnostic(Location(file, lineno, col), "",
                                      f"YAML syntax error: {exc.problem or exc.context}",
                                      "check indentation and quoting near this line",
                                      pos.line_text(lineno))]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        lineno, col = line_col(text, exc.position)
        raise RecipeError([Diagnostic(Location(file, lineno, col), "",
                                      f"character U+{_code(exc.character):04X} is not "
                                      f"allowed in YAML",
                                      "remove it, or write it as an escape in a double-quoted "
                                      "string", pos.line_text(lineno))]) from None
    except yaml.YAMLError as exc:
        raise RecipeError([Diagnostic(Location(file), "", f"YAML error: {exc}")]) from None
    except RecursionError:  # the pure-Python composer on very deep nesting
        raise RecipeError([Diagnostic(Location(file), "", f"nested more than {MAX_DEPTH} "
                                      "levels deep", "check the brackets and the "
                                      "indentation")]) from None
    if node is None:
        return None, pos
    b = _Builder(pos)
    data = b.build(node, ())
    if b.errors:
        raise RecipeError(b.errors)
    return data, pos


#: the largest recipe file read (recipes are a few KB)
MAX_RECIPE_BYTES = 16 * 2**20


def read_text(path: Path, display: str) -> tuple[str, bytes]:
    """A file's text and bytes; unreadable or non-UTF-8 files are located errors."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO or /dev/zero would never end
            raise RecipeError([Diagnostic(Location(display), "", f"{path} is not a regular "
                                          "file (a FIFO, a device, or a link to one)",
                                          "name a recipe file")])
        if st.st_size > MAX_RECIPE_BYTES:
            raise RecipeError([Diagnostic(Location(display), "", f"larger than "
                                          f"{MAX_RECIPE_BYTES // 2**20} MiB: not a recipe",
                                          "name a recipe file")])
        with open(path, "rb") as f:
            raw = f.read(MAX_RECIPE_BYTES + 1)
    except OSError as exc:
        raise RecipeError([Diagnostic(Location(display), "", f"cannot read: {exc.strerror}",
                                      "check the path")]) from None
    try:
        return raw.decode("utf-8"), raw
    except UnicodeDecodeError as exc:
        raise RecipeError([Diagnostic(Location(display, *line_col(raw, exc.start)), "",
                                      f"not UTF-8 ({exc.reason} at byte {exc.start})",
                                      "save the file as UTF-8")]) from None
