"""The build plan: plain, frozen data with a JSON round trip.

A :class:`BuildPlan` is a DAG of :class:`Step` s grouped by :class:`Variant`
(recipe × backend × build type × Python, when the package depends on the
Python ABI).  Each step carries its exact argv, environment changes, working
folder, inputs hash, outputs, memory estimate and status — ``build``, ``download``
(from a Conan remote), ``cached`` or ``skip`` (with the reason and the fix).  Formatting lives in
:mod:`builder.plan.text`; execution in :mod:`builder.execute.executor`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from builder.plan.payloads import (
    Payload,
    as_data,
    fields_of,
    payload_fields,
    payload_from_json,
    payload_to_json,
)

__all__ = ["BUILD", "CACHED", "DOWNLOAD", "SKIP", "TO_RUN", "BuildPlan", "DistPool", "PoolServer",
           "Step", "Variant", "json_default", "variant_label"]

BUILD, CACHED, SKIP = "build", "cached", "skip"
DOWNLOAD = "download"  # built elsewhere: fetched from a Conan remote instead of built
TO_RUN = (BUILD, DOWNLOAD)


@dataclass(frozen=True)
class Step:
    id: str
    # render | conan-install | configure | build | stage | test | export | publish | kernel
    kind: str
    variant: str
    commands: tuple[tuple[str, ...], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    deps: tuple[str, ...] = ()
    inputs_hash: str = ""
    outputs: tuple[str, ...] = ()
    memory: int = 0  # predicted peak bytes (0: unknown)
    status: str = BUILD
    reason: str = ""
    fix: str = ""
    #: for steps done in-process (render, fetch, publish…): what to do, as typed data
    payload: Payload | None = None
    timeout: int = 3600
    #: (NAME, where the recipe declares it) of each variable the step gets from the
    #: invoking environment when it starts (resolve.secretenv): names only, never values
    secrets: tuple[tuple[str, str], ...] = ()


_STEP_FIELDS = tuple(f.name for f in fields(Step))


def variant_label(recipe: str, backend: str, build_type: str, python: str) -> str:
    """A variant as people name it, without its key: ``greet/cuda-release-py3.11``."""
    return f"{recipe}/{backend}-{build_type}" + (f"-py{python}" if python else "")


@dataclass(frozen=True)
class Variant:
    id: str  # "<recipe>/<dirname>"
    recipe: str
    version: str
    backend: str
    build_type: str
    python: str  # "" when the native build does not depend on the Python ABI
    archs: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    key: str  # the variant key: every input, the tests' included (resolve.keys)
    prefix: str  # published install folder
    status: str = BUILD
    reason: str = ""
    fix: str = ""
    deps: tuple[str, ...] = ()
    recipe_file: str = ""
    notes: tuple[str, ...] = ()
    #: what the build is pinned to: source digest or commit, toolchain versions, Conan refs
    pins: tuple[tuple[str, str], ...] = ()
    #: what the compiled files depend on (resolve.keys): the install's manifest, the
    #: Conan package and a remote's package are found by it
    compile_key: str = ""
    #: the compile inputs less the content of in-place source folders (resolve.keys): it
    #: names the build, stage and install folders
    config_key: str = ""
    #: the environment every step of the variant starts from (resolve.stepenv); a step's
    #: ``env`` is added to it, and the runner starts the step with exactly that
    env: tuple[tuple[str, str], ...] = ()
    #: the folders its sources are read from (a path source's folder, the fetched or
    #: patched tree): under ``--sandbox``, the only project files a step can read
    sources: tuple[str, ...] = ()
    #: the dependencies still to be built whose output its compile key waits for
    #: (resolve.keys.pending): ``builder build`` plans it again once they are built, and
    #: reuses its install if what they made is byte-identical
    waits_for: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return variant_label(self.recipe, self.backend, self.build_type, self.python)


@dataclass(frozen=True)
class PoolServer:
    """A build server of the distributed pool, as its pool file declares it."""

    name: str
    addr: str  # host:port
    cores: int
    memory: int  # bytes: its cgroup cap, its budget


@dataclass(frozen=True)
class DistPool:
    """The sccache-dist pool the plan's compiles may go to (``--dist`` with a declared
    pool): what ``builder plan`` shows and what its forecast gave jobs to."""

    scheduler: str  # the scheduler's URL
    servers: tuple[PoolServer, ...]

    @property
    def cores(self) -> int:
        return sum(s.cores for s in self.servers)

    @property
    def memory(self) -> int:
        return sum(s.memory for s in self.servers)

    def to_json(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler, "servers": as_data(self.servers),
                "cores": self.cores, "memory": self.memory}

    @staticmethod
    def from_json(d: dict[str, Any]) -> DistPool:
        return DistPool(d["scheduler"], tuple(PoolServer(**s) for s in d["servers"]))


@dataclass(frozen=True)
class BuildPlan:
    variants: tuple[Variant, ...]
    steps: tuple[Step, ...]
    host: str  # one-line summary of the host the plan is for
    cpus: int
    memory_budget: int
    jobs: int
    notes: tuple[str, ...] = ()
    version: int = 1
    dist: DistPool | None = None  # the distributed pool (``--dist``); None: this host only
    _index: dict[str, Step] = field(default_factory=dict, init=False, compare=False,
                                    repr=False)
    #: variant id → its steps in plan order, made on first use (a scan per variant made
    #: showing a plan of N variants take N² time)
    _by_variant: dict[str, list[Step]] = field(default_factory=dict, init=False,
                                               compare=False, repr=False)

    def step(self, step_id: str) -> Step:
        if not self._index:
            self._index.update({s.id: s for s in self.steps})
        return self._index[step_id]

    def steps_of(self, variant_id: str) -> list[Step]:
        if not self._by_variant and self.steps:
            for s in self.steps:
                self._by_variant.setdefault(s.variant, []).append(s)
        return list(self._by_variant.get(variant_id, ()))

    def counts(self) -> dict[str, int]:
        out = {BUILD: 0, DOWNLOAD: 0, CACHED: 0, SKIP: 0}
        for s in self.steps:
            out[s.status] = out.get(s.status, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        """``dataclasses.asdict`` of the plan (without its index), each step's payload
        with its type."""
        steps = tuple({n: payload_to_json(s.payload) if n == "payload" else
                       as_data(getattr(s, n)) for n in _STEP_FIELDS} for s in self.steps)
        return {"variants": as_data(self.variants), "steps": steps, "host": self.host,
                "cpus": self.cpus, "memory_budget": self.memory_budget, "jobs": self.jobs,
                "notes": as_data(self.notes), "version": self.version,
                **({"dist": self.dist.to_json()} if self.dist else {})}

    def json_top(self) -> dict[str, Any]:
        """:meth:`to_json`'s top level with its values as they are (the variants and
        steps as objects): encoded with :func:`json_default` as the encoder's ``default``,
        it is the same JSON, made without first copying every value of the plan."""
        return {"variants": self.variants, "steps": self.steps, "host": self.host,
                "cpus": self.cpus, "memory_budget": self.memory_budget, "jobs": self.jobs,
                "notes": self.notes, "version": self.version,
                **({"dist": self.dist.to_json()} if self.dist else {})}

    @staticmethod
    def from_json(d: dict[str, Any]) -> BuildPlan:
        def tup(x: Any) -> Any:
            if isinstance(x, list):
                return tuple(tup(i) for i in x)
            return x

        def step(s: dict[str, Any]) -> Step:
            fields: dict[str, Any] = {k: tup(v) for k, v in s.items() if k != "payload"}
            return Step(**fields, payload=payload_from_json(s.get("payload")))

        steps = tuple(step(s) for s in d["steps"])
        variants = tuple(Variant(**{k: tup(v) for k, v in v_.items()}) for v_ in d["variants"])
        return BuildPlan(variants=variants, steps=steps, host=d["host"], cpus=d["cpus"],
                         memory_budget=d["memory_budget"], jobs=d["jobs"],
                         notes=tup(d.get("notes", [])), version=d.get("version", 1),
                         dist=DistPool.from_json(d["dist"]) if d.get("dist") else None)


def json_default(x: Any) -> dict[str, Any]:
    """The ``default`` hook of a JSON encoder of a plan's values: a step as in
    :meth:`BuildPlan.to_json` (its payload with its type), any other dataclass as its
    fields (:func:`fields_of`); the encoder calls it again for the dataclasses inside."""
    if type(x) is Step:
        d = fields_of(x)
        d["payload"] = payload_fields(x.payload)
        return d
    return fields_of(x)
