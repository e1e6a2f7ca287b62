"""builder.util.files.sync_tree: builder's copy of a local folder kept in step with it —
what differs rewritten, what is the same left with its times (an incremental build that
follows the copy recompiles only what changed), what is gone removed."""

from __future__ import annotations

import os
from pathlib import Path

from builder.util import writer
from builder.util.files import sync_tree


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_only_what_differs_is_rewritten(tmp_path: Path) -> None:
    writer.write_marker(tmp_path, writer.STATE_MARKER)  # builder's folder
    src, dst = tmp_path / "new", tmp_path / "copy"
    _tree(src, {"a.cpp": "a\n", "inc/b.h": "b2\n", "gone/now.txt": "x\n", "dir_now": "f\n"})
    (src / "link").symlink_to("a.cpp")
    _tree(dst, {"a.cpp": "a\n", "inc/b.h": "b1\n", "old.txt": "o\n", "gone": "was a file\n",
                "dir_now/inner": "was a folder\n"})
    (dst / "link").symlink_to("inc/b.h")
    os.utime(dst / "a.cpp", ns=(10**18, 10**18))
    os.utime(dst / "inc" / "b.h", ns=(10**18, 10**18))

    changed = sync_tree(src, dst)

    assert (dst / "a.cpp").stat().st_mtime_ns == 10**18  # the same: left as it was
    assert (dst / "inc" / "b.h").read_text() == "b2\n"
    assert (dst / "inc" / "b.h").stat().st_mtime_ns != 10**18
    assert not (dst / "old.txt").exists()
    assert (dst / "gone" / "now.txt").read_text() == "x\n"
    assert (dst / "dir_now").read_text() == "f\n"
    assert os.readlink(dst / "link") == "a.cpp"
    got = sorted(str(p.relative_to(dst)) for p in dst.rglob("*"))
    want = sorted(str(p.relative_to(src)) for p in src.rglob("*"))
    assert got == want
    assert changed == 6  # b.h, old.txt, gone (a folder now, then its file), dir_now, link
    assert sync_tree(src, dst) == 0  # in step: nothing to write
