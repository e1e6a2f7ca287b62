"""How many tests a test step ran, read from its output: ctest, pytest, GoogleTest and
unittest summaries.  A step that ran none fails unless its recipe allows it
(``allow_empty``): ``ctest --test-dir build`` where ``enable_testing()`` sits in a
subfolder finds nothing and exits 0, and that is not a pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["PYTEST_NO_TESTS", "Counts", "count", "verdict"]

#: pytest's exit status when it collected no test
PYTEST_NO_TESTS = 5


@dataclass(frozen=True)
class Counts:
    tool: str  # ctest | pytest | gtest | unittest
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped

    def text(self) -> str:
        parts = [f"{self.passed} passed"]
        parts += [f"{n} {w}" for n, w in ((self.failed, "failed"), (self.skipped, "skipped"))
                  if n]
        return f"{', '.join(parts)} ({self.tool})" if self.total else f"no tests ({self.tool})"


#: CTest 4 leaves the failed count out when none failed ("100% tests passed out of 3")
_CTEST = re.compile(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)")
_CTEST_SKIP = re.compile(r"\*\*\*(Skipped|Not Run \(Disabled\))")
_PYTEST = re.compile(r"^=*\s*((?:\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed|"
                     r"deselected|warnings?)(?:, )?)+) in [\d.]+s")
_PYTEST_NONE = re.compile(r"^=*\s*no tests ran( in [\d.]+s)?")
_GTEST_RAN = re.compile(r"^\[=+\] (\d+) tests? from \d+ test (?:suites?|cases?) ran")
_GTEST = re.compile(r"^\[\s+(PASSED|SKIPPED|FAILED)\s+\] (\d+) tests?")
_UNITTEST = re.compile(r"^Ran (\d+) tests? in ")
_UNITTEST_END = re.compile(r"^(OK|FAILED)\s*(\((.*)\))?$")


def _pytest(line: str) -> Counts | None:
    m = _PYTEST.match(line.strip())
    if m:
        got = {w: int(n) for n, w in re.findall(r"(\d+) (\w+)", m.group(1))}
        return Counts("pytest", got.get("passed", 0) + got.get("xpassed", 0),
                      got.get("failed", 0) + got.get("errors", 0) + got.get("error", 0),
                      got.get("skipped", 0) + got.get("xfailed", 0))
    if _PYTEST_NONE.match(line.strip()):
        return Counts("pytest")
    return None


def count(lines: Iterable[str]) -> Counts | None:
    """The counts of the last summary the output holds (ctest's first: it wraps other
    tools' output), or None when no known summary is there."""
    found: dict[str, Counts] = {}
    gtest: dict[str, int] = {}
    unittest_ran: int | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        if "No tests were found!!!" in line:
            found["ctest"] = Counts("ctest")
        elif m := _CTEST.search(line):
            total, failed = int(m.group(3)), int(m.group(2) or 0)
            skipped = found["ctest-skip"].skipped if "ctest-skip" in found else 0
            found["ctest"] = Counts("ctest", total - failed - skipped, failed, skipped)
        elif _CTEST_SKIP.search(line):
            prev = found.get("ctest-skip", Counts("ctest"))
            found["ctest-skip"] = Counts("ctest", skipped=prev.skipped + 1)
        elif (c := _pytest(line)) is not None:
            found["pytest"] = c
        elif m := _GTEST_RAN.match(line):
            gtest = {"ran": int(m.group(1))}
        elif (m := _GTEST.match(line)) and gtest:
            gtest[m.group(1)] = int(m.group(2))
            found["gtest"] = Counts("gtest", gtest.get("PASSED", 0), gtest.get("FAILED", 0),
                                    gtest.get("SKIPPED", 0))
        elif m := _UNITTEST.match(line):
            unittest_ran = int(m.group(1))
            found["unittest"] = Counts("unittest", unittest_ran)
        elif (m := _UNITTEST_END.match(line)) and unittest_ran is not None:
            detail = dict(re.findall(r"(\w+)=(\d+)", m.group(3) or ""))
            failed = int(detail.get("failures", 0)) + int(detail.get("errors", 0))
            skipped = int(detail.get("skipped", 0))
            found["unittest"] = Counts("unittest", unittest_ran - failed - skipped, failed,
                                       skipped)
    if "gtest" not in found and gtest.get("ran") == 0:
        found["gtest"] = Counts("gtest")
    for tool in ("ctest", "pytest", "gtest", "unittest"):
        if tool in found:
            return found[tool]
    return None


def verdict(lines: list[str], rc: int, allow_empty: bool) -> tuple[Counts | None, str | None]:
    """A test step's counts and why it fails ("": for its exit status alone, as before;
    None: it passes, though pytest exited 5 — no tests, allowed)."""
    counts = count(lines)
    empty = counts is not None and counts.total == 0
    if rc == PYTEST_NO_TESTS and empty and counts is not None and counts.tool == "pytest":
        return counts, None if allow_empty else (
            "pytest collected no tests (exit status 5): a test step that ran nothing is not "
            "a pass; fix the test paths, or set allow_empty: true on the test")
    if rc != 0:
        return counts, ""
    if empty and not allow_empty:
        assert counts is not None
        return counts, (f"it ran no test ({counts.text()}): a test step that ran nothing is "
                        f"not a pass; point it at the tests (ctest: the folder whose "
                        f"CMakeLists calls enable_testing()); if an option turns the tests "
                        f"off, name it in the test's enabled_by; or set allow_empty: true on "
                        f"the test")
    return counts, None
