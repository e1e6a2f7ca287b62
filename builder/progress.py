"""Progress output for ``builder build``: one line per event, readable in a log.

(Rich live progress bars with memory against the budget are a later issue; this
printer is what CI and non-TTY output use.)
"""

from __future__ import annotations

import os
import sys

from .execute import Event


class LinePrinter:
    def __init__(self, quiet: bool = False, verbose: bool = False) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self.github = os.environ.get("GITHUB_ACTIONS") == "true"

    def event(self, e: Event) -> None:
        where = f"[{e.index}/{e.total}]"
        if e.kind == "start":
            if self.github:
                print(f"::group::{e.step}", flush=True)
            if not self.quiet:
                print(f"{where} run     {e.step}", flush=True)
        elif e.kind == "done":
            if not self.quiet:
                print(f"{where} done    {e.step} ({e.seconds:.1f}s)", flush=True)
            if self.github:
                print("::endgroup::", flush=True)
        elif e.kind == "failed":
            print(f"{where} FAILED  {e.step} ({e.seconds:.1f}s)", flush=True)
            if self.github:
                print("::endgroup::", flush=True)
        elif e.kind == "aborted":
            print(f"{where} not run {e.step} ({e.message})", flush=True)
        elif e.kind == "skip" and self.verbose:
            print(f"{where} skip    {e.step}: {e.message}", flush=True)
        elif e.kind == "cached" and self.verbose:
            print(f"{where} cached  {e.step}", flush=True)

    def line(self, step: str, text: str) -> None:
        sys.stdout.write(f"    {text}\n")
