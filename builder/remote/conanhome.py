"""builder's project-local Conan home (``.builder/conan``): made with no remotes, and
rebuilt when a conan killed while it made the home (or stopped by a full disk) left it
damaged — its package database without its tables, or a file Conan generates (a plugin,
its settings) empty or cut short, which Conan never writes again.  It is a cache of what
builder's recipes build, so emptying it loses nothing that the next build does not make
again; the remotes, credentials and settings builder or the user wrote stay."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from builder.util import writer
from builder.workspace.paths import Workspace

__all__ = ["CONAN_TABLES", "GENERATED", "conan_home_damage", "ensure_conan_home",
           "repair_conan_home"]


#: the tables Conan 2's package database must hold (``p/cache.sqlite3``)
CONAN_TABLES = frozenset({"recipes", "packages"})
#: what Conan generates in a new home (and again only when they are missing): removed
#: together when one is damaged, so that the next conan call makes them all anew
GENERATED = ("extensions", "migrations", "version.txt", "settings.yml")
#: generated plugins and the function each must define
_PLUGINS = {"extensions/plugins/compatibility/compatibility.py": "def compatibility",
            "extensions/plugins/profile.py": "def profile_plugin"}


def conan_home_damage(home: Path) -> str | None:
    """What is wrong with builder's Conan home (None: nothing, or not made yet): its
    package database (:func:`_database_damage`) or a file Conan generated
    (:func:`_generated_damage`).  Either makes every later conan call fail."""
    return _database_damage(home) or _generated_damage(home)


def _generated_damage(home: Path) -> str | None:
    """A generated file of the home that is empty, cut short or not valid Python: Conan
    writes each once, when it is missing."""
    files = [home / "version.txt", home / "settings.yml",
             *(p for d in ("extensions", "migrations") for p in sorted((home / d).rglob("*.py"))
               if (home / d).is_dir())]
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            return f"{f} cannot be read ({exc})"
        rel = f.relative_to(home).as_posix()
        if not text.strip():
            return f"{f} is empty"
        if f.name == "settings.yml" and not all(f"\n{k}:" in f"\n{text}" for k in
                                                  ("os", "arch", "compiler", "build_type")):
            return f"{f} is cut short (not every top-level setting is there)"
        if f.suffix == ".py":
            try:
                compile(text, str(f), "exec")
            except (SyntaxError, ValueError) as exc:
                return f"{f} is cut short ({exc.__class__.__name__})"
            if rel in _PLUGINS and _PLUGINS[rel] not in text:
                return f"{f} is cut short (no {_PLUGINS[rel].removeprefix('def ')})"
    return None


def _database_damage(home: Path) -> str | None:
    """What is wrong with the package database (``p/cache.sqlite3``): a conan killed
    while it created the database leaves one without its tables."""
    import sqlite3

    db = home / "p" / "cache.sqlite3"
    if not db.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"its database {db} cannot be read ({exc})"
    missing = sorted(CONAN_TABLES - names)
    return f"its database {db} is half-made (no such table: {', '.join(missing)})" \
        if missing else None


def repair_conan_home(ws: Workspace) -> str | None:
    """Rebuild a damaged Conan home: its package cache is builder's cache, so it is
    emptied (the remotes and settings stay), and the installs whose Conan packages lived
    in it are removed so that the next build makes both again.  Returns the note to show
    (None: nothing was wrong)."""
    home = ws.conan_home
    generated = _generated_damage(home)
    problem = _database_damage(home)
    if problem is None and generated is None:
        return None
    doomed = [*(home / g for g in GENERATED if generated)]
    if problem is not None:
        doomed += [home / "p", ws.installs]
    for path in doomed:
        aside = path.with_name(f".{path.name}.damaged{os.getpid()}")
        if path.exists() or path.is_symlink():
            writer.move(path, aside)
            writer.remove(aside)
    if problem is None:
        return (f"builder's Conan home {home} was damaged: {generated}; the files Conan "
                f"generates there are rebuilt")
    return (f"builder's Conan home {home} was damaged: {problem}; its package cache was "
            f"emptied and the installs it held are rebuilt from the recipes")


def ensure_conan_home(ws: Workspace) -> None:
    """A project-local Conan home with no remotes: builds never reach the network unless
    a remote is configured on purpose (``builder remote add``)."""
    from builder.util.files import atomic_write

    note = repair_conan_home(ws)
    if note:
        print(f"note: {note}", file=sys.stderr, flush=True)
    home = ws.conan_home
    if not (home / "remotes.json").exists():
        atomic_write(home / "remotes.json", json.dumps({"remotes": []}, indent=2))
    if not (home / "global.conf").exists():
        atomic_write(home / "global.conf", "core:non_interactive=True\n")
