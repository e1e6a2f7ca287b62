"""The memory package's shape as tests: one tuning object that the docs list and the
plan's forecast and the scheduler both read, one config type from plan to broker, typed
broker↔launcher messages, one table of source suffixes."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from builder.memory import estimate, launcher, wire
from builder.memory.intake import MemorySettings
from builder.memory.jobs import learned_lines
from builder.memory.suffixes import SOURCE_SUFFIXES
from builder.memory.tuning import TUNING, knobs, knobs_table
from builder.plan.payloads import MemoryConfig
from tests.conftest import REPO


def test_the_docs_list_every_knob_as_the_code_defines_it() -> None:
    assert knobs_table() in (REPO / "docs" / "memory.md").read_text(encoding="utf-8")
    assert all(unit and len(why) > 20 for _, _, unit, why in knobs())


def test_the_priors_file_holds_data_and_no_policy() -> None:
    """Knobs in a JSON file beside the code's defaults let the plan and the broker read
    different values; the priors file holds only the per-header priors."""
    table = json.loads((REPO / "builder" / "resources" / "memory_priors.json").read_text())
    assert set(table) <= {"_doc", "headers", "default"}


def test_the_broker_reads_the_plans_memory_config_itself() -> None:
    """No field-by-field copy: the plan's MemoryConfig is what the broker takes."""
    wanted = {n for n in dir(MemorySettings) if not n.startswith("_")}
    fields = typing.get_type_hints(MemoryConfig)
    assert wanted <= set(fields)
    hints = {n: typing.get_type_hints(getattr(MemorySettings, n).fget)["return"]
             for n in wanted}
    assert all(fields[n] == hints[n] for n in wanted), (fields, hints)


@pytest.mark.parametrize("msg", [
    wire.Acquire("/s/a.cu", ("nvcc", "-c", "a.cu"), "/b", True, False, "compile", "/g/j", "/g"),
    wire.Queued(), wire.Grant(True, False, ("-g0",), 3 * 2**30, "recipe"), wire.Pause(),
    wire.Resume(), wire.Requeue(), wire.Report(1.5, 2**30, True),
    wire.Done(0, 2**30, 12.0, 11.5, 0.5, 3, False, (0.5, 1.0), False, "cgroup"),
    wire.Done(None)])
def test_every_message_reads_back_as_it_was_sent(msg: wire.Message) -> None:
    line = wire.encode(msg)
    assert line.endswith(b"\n") and wire.decode(line) == msg


@pytest.mark.parametrize("line", [b'{"op": "grnat"}', b"[1, 2]", b'{"op": "progress", "rss": "x"}',
                                  b'{"op": "acquire", "argv": "nvcc"}', b"not json"])
def test_what_is_not_a_message_is_refused(line: bytes) -> None:
    with pytest.raises(ValueError):
        wire.decode(line)


def test_one_table_of_source_suffixes() -> None:
    assert estimate.SOURCE_SUFFIXES is SOURCE_SUFFIXES is launcher.SOURCE_SUFFIXES
    assert launcher.source_of(["clang", "-c", "a.mm", "-o", "a.o"]) == "a.mm"


def test_the_summary_says_what_a_job_learned_from_its_siblings() -> None:
    jobs = [{"file": "csrc/cuda/b.cu", "first_estimate": 3 * 2**30,
             "estimate": int(2.8 * 2**30), "siblings": 2},
            {"file": "csrc/a.cpp", "first_estimate": 2**30, "estimate": 2**30, "siblings": 0}]
    assert learned_lines(jobs) == [
        "csrc/cuda/b.cu: estimate 3.0 GiB → 2.8 GiB learned from 2 siblings"]


def test_tuning_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TUNING.fast = 1.0  # type: ignore[misc]
