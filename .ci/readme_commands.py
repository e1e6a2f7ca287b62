"""Print the README's quick-start commands, NUL-separated, exactly as written.

`.ci/run` runs what this prints (so CI runs the README, not a copy of it), and
tests/unit/test_docs.py checks that there are two and that what they name exists.
The commands are the lines of the first ```bash block under "## Quick start"."""

from __future__ import annotations

import sys
from pathlib import Path


def quick_start(readme: str) -> list[str]:
    lines = readme.splitlines()
    try:
        start = lines.index("## Quick start")
    except ValueError:
        raise SystemExit("README.md: no '## Quick start' section") from None
    block: list[str] | None = None
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if block is None and line.strip() == "```bash":
            block = []
        elif block is not None and line.strip() == "```":
            return [c for c in block if c.strip() and not c.lstrip().startswith("#")]
        elif block is not None:
            block.append(line)
    raise SystemExit("README.md: no ```bash block in the Quick start section")


if __name__ == "__main__":
    text = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md").read_text()
    sys.stdout.write("".join(c + "\0" for c in quick_start(text)))
