"""Show a :class:`BuildPlan` as text (a tree: recipe → variant → step with its
exact commands), JSON (round-trips through :meth:`BuildPlan.from_json`) or
Graphviz dot."""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Iterator
from typing import IO

from builder.plan.model import BUILD, CACHED, DOWNLOAD, SKIP, BuildPlan, Step, json_default
from builder.plan.payloads import CompileJobs, RenderFiles, WheelBuild

__all__ = ["dot", "gib", "stream_text", "text", "text_lines", "to_json", "write_json"]

_MARK = {BUILD: "build", DOWNLOAD: "download", CACHED: "cached", SKIP: "skip"}
_COLOR = {BUILD: "\033[33m", DOWNLOAD: "\033[36m", CACHED: "\033[32m", SKIP: "\033[90m"}
_RESET = "\033[0m"


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def estimate_source(source: str) -> str:
    """A memory estimate's source in words (``learned:recipe:src/*.cpp:host`` → ``like
    src/*.cpp so far``), for the plan and the live display."""
    learned = source.startswith("learned:")
    src = source.removeprefix("learned:")
    kind, _, rest = src.partition(":")
    if kind in ("recipe", "prior") and rest:
        what = rest.split(":")[0]
        what = f"files including {what}" if kind == "prior" else what
        return f"like {what} so far" if learned else \
            (f"typical for {what}" if kind == "prior" else "from the recipe")
    if learned:
        return "like this build's other files so far"
    return {"history": "measured before", "history-file": "measured before (other flags)",
            "recipe": "from the recipe", "default": "default guess"}.get(kind, source)


def _status(status: str, color: bool) -> str:
    word = f"[{_MARK.get(status, status)}]"
    return f"{_COLOR[status]}{word}{_RESET}" if color and status in _COLOR else word


def _step_lines(s: Step, color: bool, show_commands: bool, said: str = "") -> list[str]:
    """A step's lines; ``said`` is its variant's skip reason, not repeated per step."""
    head = f"    {_status(s.status, color)} {s.id.split('/', 2)[-1]}"
    lines = [head]
    if s.status == SKIP and s.reason and s.reason != said:
        lines.append(f"        skip: {s.reason}")
    pred = s.payload.prediction if isinstance(s.payload, CompileJobs) else None
    if pred is not None and not pred.jobs and s.status == BUILD:
        lines.append("        memory: no compile jobs known before building (a git or url "
                     "source's files are read once it is fetched)")
    if pred and pred.jobs:
        lines.append(f"        memory: {pred.jobs} compile job(s) under a "
                     f"{gib(pred.budget)} budget → predicted peak {gib(pred.peak)}, "
                     f"~{pred.parallelism:.1f} in parallel, ~{pred.wall:.0f} s"
                     + (f"; {pred.remote} of them on the distributed pool" if pred.remote
                        else ""))
        for h in pred.heaviest[:3]:
            lines.append(f"          {h.file}: ~{gib(h.peak)} ({estimate_source(h.source)})")
    w = s.payload if isinstance(s.payload, WheelBuild) else None
    if w and w.wheel:
        lines.append(f"        wheel: {w.wheel}")
        lines.append(f"          {w.note}")
        if w.fix:
            lines.append(f"          fix: {w.fix}")
        if w.torch:
            lines.append(f"          requires torch=={'.'.join(w.torch.split('.')[:2])}.* "
                         f"if its binaries link libtorch (built against torch {w.torch})")
        lines.append(f"          {w.per_python}")
        if w.variant_label:
            lines.append(f"          variant {w.variant_label}: "
                         f"{'; '.join(w.variant_properties)}")
        if w.gpu_archs:
            lines.append(f"          its CUDA binaries must carry SASS for exactly "
                         f"{', '.join(w.gpu_archs)} (read from .nv_fatbin when sealed)")
        if w.min_driver:
            linux = f" (Linux ≥ {w.min_driver_linux})" if w.min_driver_linux else ""
            lines.append(f"          minimum driver: CUDA {w.min_driver}{linux} at most — "
                         f"{'; '.join(w.min_driver_why)}; compress mode "
                         f"{w.compress_mode or 'none (nvcc has no --compress-mode)'}")
        lines.append("          sealed: symbol versions vs its tag, an SBOM of every .so "
                     "(.dist-info/sboms/builder.cdx.json)")
    if show_commands:
        for k, v in s.env:
            lines.append(f"        env {k}={v}")
        for k, where in s.secrets:  # the name only: the value is read when it starts
            lines.append(f"        env {k} from the shell when it runs (a secret, {where})")
        for argv in s.commands:
            lines.append(f"        $ {shlex.join(argv)}")
        if isinstance(s.payload, RenderFiles):
            for path in s.payload.paths():
                lines.append(f"        writes {path}")
    return lines


def _variants(plan: BuildPlan) -> str:
    n = {st: sum(1 for v in plan.variants if v.status == st)
         for st in (BUILD, DOWNLOAD, CACHED, SKIP)}
    return ", ".join(f"{n[st]} {word}" for st, word in (
        (BUILD, "to build"), (DOWNLOAD, "to download"), (CACHED, "up to date"),
        (SKIP, "skipped")) if n[st] or st in (BUILD, SKIP))


def text(plan: BuildPlan, *, color: bool = False, commands: bool = True) -> str:
    return "".join(text_lines(plan, color=color, commands=commands))


def text_lines(plan: BuildPlan, *, color: bool = False, commands: bool = True
               ) -> Iterator[str]:
    """:func:`text`, a variant at a time (each chunk ends with a newline): a plan of
    thousands of variants is written without holding all of its text at once."""
    counts = plan.counts()
    out = [f"host: {plan.host}",
           f"parallel jobs: {plan.jobs}, memory budget: {gib(plan.memory_budget)}",
           f"variants: {_variants(plan)}",
           f"steps: {counts[BUILD]} to build, "
           + (f"{counts[DOWNLOAD]} to download, " if counts[DOWNLOAD] else "")
           + f"{counts[CACHED]} cached, {counts[SKIP]} skipped"]
    current = ""
    for v in plan.variants:
        yield "".join(f"{line}\n" for line in out)
        out = []
        if v.recipe != current:
            current = v.recipe
            out.append("")
            out.append(f"{v.recipe} {v.version}  ({v.recipe_file})")
        desc = f"{v.backend} {v.build_type}" + (f" py{v.python}" if v.python else "")
        if v.archs:
            desc += f" archs={','.join(v.archs)}"
        opts = " ".join(f"{k}={val}" for k, val in v.options)
        out.append(f"  {_status(v.status, color)} {desc}  [{v.id.split('/', 1)[1]}]")
        if opts:
            out.append(f"      options: {opts}")
        if v.status == SKIP:
            out.append(f"      skip: {v.reason}")
            out.append(f"      fix:  {v.fix}")
        elif v.status == DOWNLOAD:
            out.append(f"      download: {v.reason}")
        elif v.status == CACHED and v.reason:
            out.append(f"      {v.reason} (manifest.json matches the inputs)")
        if commands and v.env and v.status in (BUILD, DOWNLOAD):
            # once per variant; each step below shows only its own additions
            out.append("      environment of every step (nothing else of the shell's):")
            out.extend(f"        {k}={val}" for k, val in v.env)
        for s in plan.steps_of(v.id):
            out.extend(_step_lines(s, color, commands and v.status != CACHED,
                                   v.reason if v.status == SKIP else ""))
    for n in plan.notes:
        out.append(f"note: {n}")
    yield "".join(f"{line}\n" for line in out)


def stream_text(plan: BuildPlan, stream: IO[str], *, color: bool = False,
                commands: bool = True) -> None:
    """:func:`text_lines` written in chunks of about :data:`CHUNK` characters, each ending
    with a newline: a write per variant made the terminal's redactor (whose cost is per
    call) a large part of showing a plan of thousands of variants."""
    buf: list[str] = []
    size = 0
    for chunk in text_lines(plan, color=color, commands=commands):
        buf.append(chunk)
        size += len(chunk)
        if size >= CHUNK:
            stream.write("".join(buf))
            buf, size = [], 0
    if buf:
        stream.write("".join(buf))


def to_json(plan: BuildPlan) -> str:
    out = io.StringIO()
    write_json(plan, out)
    return out.getvalue()


#: the encoder of :func:`write_json`'s lines: ``json.dumps(as_data(x), sort_keys=True)``'s
#: output, without its per-call set-up and its check for cycles (a plan is a tree of plain
#: values), and without copying every value first: the C encoder walks the tuples and
#: asks :func:`json_default` for each dataclass's fields
_LINE = json.JSONEncoder(sort_keys=True, check_circular=False, default=json_default).encode
#: characters gathered before a write: every write to the terminal passes the redactor,
#: whose cost is per call (a line per write made it most of a large plan's time)
CHUNK = 1 << 20


def write_json(plan: BuildPlan, stream: IO[str]) -> None:
    """The plan's JSON (:meth:`BuildPlan.to_json`), its top level indented and each
    variant and step on a line of its own (keys sorted): diffable, and made a line at a
    time by the C encoder (an indented dump of a plan of thousands of variants took
    several times as long as resolving it), written in chunks of about :data:`CHUNK`."""
    data = plan.json_top()
    keys = sorted(data)
    buf: list[str] = ["{\n"]
    size = 0
    for i, k in enumerate(keys):
        end = ",\n" if i < len(keys) - 1 else "\n"
        v = data[k]
        if isinstance(v, (list, tuple)) and v:
            buf.append(f"  {json.dumps(k)}: [\n")
            last = len(v) - 1
            for j, item in enumerate(v):
                line = f"    {_LINE(item)}{',' if j < last else ''}\n"
                buf.append(line)
                size += len(line)
                if size >= CHUNK:
                    stream.write("".join(buf))
                    buf, size = [], 0
            buf.append(f"  ]{end}")
        else:
            buf.append(f"  {json.dumps(k)}: {_LINE(v)}{end}")
    buf.append("}\n")
    stream.write("".join(buf))


def dot(plan: BuildPlan) -> str:
    fill = {BUILD: "#ffe08a", DOWNLOAD: "#a9d6f5", CACHED: "#b7e4c7", SKIP: "#dddddd"}
    out = ["digraph plan {", "  rankdir=LR;", "  node [shape=box, style=filled, "
           "fontname=Helvetica];"]
    for v in plan.variants:
        cluster = v.id.replace("/", "_").replace("-", "_").replace(".", "_")
        out.append(f"  subgraph cluster_{cluster} {{")
        out.append(f"    label={json.dumps(v.id)};")
        for s in plan.steps_of(v.id):
            label = s.id.split("/", 2)[-1]
            out.append(f"    {json.dumps(s.id)} [label={json.dumps(label)}, "
                       f"fillcolor=\"{fill.get(s.status, '#ffffff')}\"];")
        out.append("  }")
    for s in plan.steps:
        for d in s.deps:
            out.append(f"  {json.dumps(d)} -> {json.dumps(s.id)};")
    out.append("}")
    return "\n".join(out) + "\n"
