"""The launcher's view of a compiler's process tree: every descendant, its anonymous
memory and CPU time, found through the kernel's per-task children lists (or, without
them, a scan of every process)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from builder.memory import proctree

#: a parent holding 30 MiB that starts a child holding 50 MiB, which starts `sleep`
TREE = ("import subprocess, sys, time\n"
        "b = bytearray(30 * 2**20)\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import subprocess, time; "
        "b = bytearray(50 * 2**20); s = subprocess.Popen([\"sleep\", \"30\"]); "
        "time.sleep(30)'])\n"
        "time.sleep(30)\n")


@pytest.fixture
def tree():  # type: ignore[no-untyped-def]
    p = subprocess.Popen([sys.executable, "-c", TREE])
    deadline = time.monotonic() + 20
    while len(proctree.subtree(p.pid, proctree.process_table())) < 3 and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the child has touched its 50 MiB
    yield p.pid
    proctree.signal_tree(p.pid, 9)
    p.wait()


@pytest.mark.parametrize("children_files", [True, False], ids=["children-files", "scan"])
def test_tree_sample_sees_every_descendant(tree: int, children_files: bool,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if children_files and not proctree.CHILDREN_FILES:
        pytest.skip("this kernel has no /proc/<pid>/task/<tid>/children")
    monkeypatch.setattr(proctree, "CHILDREN_FILES", children_files)
    pids = proctree.descendants(tree)
    assert pids[0] == tree and len(pids) == 3
    assert sorted(pids) == sorted(proctree.subtree(tree, proctree.process_table()))
    rss, cpu, n = proctree.tree_sample(tree)
    assert n == 3 and rss >= 80 * 2**20 and cpu > 0


def test_signal_tree_stops_and_continues_every_descendant(tree: int) -> None:
    def states() -> set[str]:
        out = set()
        for pid in proctree.descendants(tree):
            stat = Path(f"/proc/{pid}/stat").read_text()
            out.add(stat[stat.rindex(")") + 2])
        return out

    proctree.signal_tree(tree, 19)  # SIGSTOP
    time.sleep(0.2)
    assert states() == {"T"}
    proctree.signal_tree(tree, 18)  # SIGCONT
    time.sleep(0.2)
    assert "T" not in states()
