"""What a step handler may use of the executor running it (:class:`StepHost`), so that
the handlers of each kind of step live in modules of their own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

from builder.plan.model import Step
from builder.util.runner import Runner
from builder.workspace.paths import Workspace

__all__ = ["StepHost", "safe_name"]


def safe_name(step_id: str) -> str:
    """A step id as a file name (logs, reports, sockets)."""
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", step_id)


class StepHost(Protocol):
    ws: Workspace
    runner: Runner
    broker: Any  # the running build step's memory broker, for progress
    cache_stats: list[dict[str, int]]  # compiler cache hits/misses per build
    oom: list[str]  # compiles killed out of memory
    #: what cost time in the memory scheduler: compiles its backstop killed and ran again,
    #: its own failure
    memory_notes: list[str]

    def commands(self, step: Step) -> None:
        """Run the step's commands, each logged; a failure raises StepFailed."""

    def log_path(self, step: Step) -> Path:
        """The step's log file."""

    def progress(self, step: Step, text: str) -> None:
        """Say how a long wait of the step goes (a "progress" event)."""

    def step_env(self, step: Step, changes: dict[str, str] | None = None) -> dict[str, str]:
        """The whole environment the step runs with (resolve.stepenv.compose)."""
