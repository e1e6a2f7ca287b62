"""builder's project-local Conan home (``.builder/conan``): made with no remotes, and
rebuilt when its package database is damaged — it is a cache of what builder's recipes
build, so emptying it loses nothing that the next build does not make again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from builder.util import writer
from builder.workspace.paths import Workspace

__all__ = ["CONAN_TABLES", "conan_home_damage", "ensure_conan_home", "repair_conan_home"]


#: the tables Conan 2's package database must hold (``p/cache.sqlite3``)
CONAN_TABLES = frozenset({"recipes", "packages"})


def conan_home_damage(home: Path) -> str | None:
    """What is wrong with the package database of builder's Conan home (None: nothing,
    or no database yet).  A conan killed, or stopped by a full disk, while it created the
    database leaves one without its tables, and every later conan call fails."""
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
    problem = conan_home_damage(ws.conan_home)
    if problem is None:
        return None
    for folder in (ws.conan_home / "p", ws.installs):
        aside = folder.with_name(f".{folder.name}.damaged{os.getpid()}")
        if folder.exists():
            writer.move(folder, aside)
            writer.remove(aside)
    return (f"builder's Conan home {ws.conan_home} was damaged: {problem}; its package "
            f"cache was emptied and the installs it held are rebuilt from the recipes")


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
