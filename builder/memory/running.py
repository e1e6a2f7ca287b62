"""A running job as the scheduler core sees it: its record, its time model's inputs, its
last report and its pauses.  Pure state on the caller's clock; the broker keeps the
connection to the job's launcher elsewhere."""

from __future__ import annotations

from dataclasses import dataclass

from builder.memory.jobs import JobRecord
from builder.memory.policy import Envelope, Running

__all__ = ["Run"]


@dataclass
class Run:
    rec: JobRecord
    seconds: float  # the time model's CPU seconds (0: unknown)
    threads: int
    started: float  # when it was admitted
    curve: tuple[float, ...] = ()  # its measured memory curve (the time model's bound)
    span: float = 0.0  # CPU seconds that predict its end, if longer than ``seconds``
    cpu: float | None = None  # last reported CPU seconds …
    cpu_active: float = 0.0  # … and the job's active time when it was reported
    rss: int = 0
    top: int = 0  # the most it reported holding
    fall: float = 0.0  # what its siblings held after their peaks, or its prior's fall
    paused: bool = False
    paused_at: float = 0.0
    paused_total: float = 0.0
    held: bool = False  # stopped by the backstop: only the backstop thaws it
    ticked: float = -1.0  # when :meth:`account` last ran

    def active(self, now: float) -> float:
        """Seconds it has run, not counting pauses."""
        stopped = self.paused_total + (now - self.paused_at if self.paused else 0.0)
        return max(0.0, now - self.started - stopped)

    def report(self, cpu: float, rss: int, now: float) -> None:
        """Its launcher's report: CPU seconds and memory of its process tree."""
        self.cpu, self.cpu_active = cpu, self.active(now)
        self.rss, self.top = rss, max(self.top, rss)

    def view(self, now: float) -> Running:
        """What the policy needs: its progress bounded from its last report."""
        active = self.active(now)
        cpu = None
        if self.cpu is not None:
            cpu = self.cpu + max(0.0, active - self.cpu_active) * max(self.threads, 1)
        return Running(self.rec.reserve, now - active, self.seconds, self.threads, cpu,
                       self.rss, self.paused, curve=self.curve, rss_cpu=self.cpu or 0.0,
                       span=self.span, since=self.started, top=self.top, fall=self.fall,
                       speculative=self.rec.speculative, peak=self.rec.estimate)

    def account(self, env: Envelope, now: float) -> None:
        """Add the time since the last scheduling tick to the record's ``above`` or
        ``overdue`` when its bound ``env`` says why it counts at its peak (job report)."""
        dt = now - self.ticked if self.ticked >= 0 else 0.0
        self.ticked = now
        if env.why == "above":
            self.rec.above += dt
        elif env.why == "overdue":
            self.rec.overdue += dt

    def stop(self, now: float, held: bool = False) -> bool:
        """Pause it (``held``: by the backstop, which alone thaws it); True: it ran."""
        if held and not self.held:
            self.held = True
            self.rec.held += 1
        if self.paused:
            return False
        self.paused, self.paused_at = True, now
        self.rec.pauses += 1
        return True

    def go(self, now: float) -> bool:
        """Resume it; True: it was paused."""
        if not self.paused:
            return False
        self.paused_total += now - self.paused_at
        self.paused = self.held = False
        return True
