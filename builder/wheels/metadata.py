"""What a wheel will be, decided at plan time (pure): its name, tags, requirements and
the manylinux repair it gets — or, when it gets none, why.

Terms:

* **distribution name** — the name on the index.  A wheel whose binaries were built by a
  GPU toolchain carries the toolchain's major version in it (``llaisys-cu13``), the way
  ``cupy-cuda12x`` and ``nvidia-cublas-cu12`` do: indexes refuse local versions
  (``1.0+cu130``), and a name is what ``pip install`` selects by.  The import name is
  unchanged.  Its GPU archs go into the metadata (``Keywords``) and, for CUDA, the trove
  classifier ``Environment :: GPU :: NVIDIA CUDA :: <major>``.
* **policy** — the manylinux policy auditwheel repairs a Linux wheel to (``wheel.manylinux``
  in the recipe): ``auto`` (the oldest one the binaries satisfy), a named one, or none.
* **runtime-provided libraries** — sonames never copied into a wheel: torch's (the pinned
  torch wheel brings them; a second copy would be a second, incompatible libtorch in the
  process) and the GPU drivers' (they belong to the machine, not to a package).
* **runtime libraries** — the CUDA toolkit's own libraries (cudart, cuBLAS, …) are not
  grafted either: NVIDIA ships them as wheels, and a lean wheel requires those
  (:mod:`builder.wheels.runtime`); ``toolkit`` names the CUDA version that decides which.
* **pure after all** — a ``python.abi: none`` package of a native build may hold no
  binary (a CMake project that installs only Python files): it becomes ``py3-none-any``
  when written, with nothing to repair, so ``glob`` admits both.
* **torch pin** — a wheel whose binaries link libtorch/libc10 was compiled against one
  torch release's C++ ABI and headers; it requires ``torch==<major>.<minor>.*``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from packaging.version import InvalidVersion, Version

from builder.wheels.build import dist_name, platform_tag
from builder.wheels.runtime import exclusions

__all__ = ["GPU_NAMING", "MANYLINUX_ALIASES", "RUNTIME_PROVIDED", "TORCH_SONAMES", "WheelPlan",
           "plan_wheel", "torch_pin"]

#: sonames a wheel never carries: the runtime provides them
RUNTIME_PROVIDED = (
    "libtorch.so*", "libtorch_*.so*", "libc10.so*", "libc10_*.so*", "libshm.so*",
    "libcuda.so*", "libnvidia-ml.so*", "libamdhip64.so*", "libhsa-runtime64.so*",
)
#: sonames whose presence among a wheel's DT_NEEDED entries means "built against torch"
TORCH_SONAMES = re.compile(r"^lib(torch|c10)(_[a-z0-9_]+)?\.so")

#: backend kind → (its compiler tool, the distribution-name suffix, a trove classifier)
#: (data, so that adding a toolchain is a table edit, not a branch)
GPU_NAMING = {
    "cuda": ("nvcc", "cu{major}", "Environment :: GPU :: NVIDIA CUDA :: {major}"),
    "rocm": ("hipcc", "rocm{major}", ""),
}

MANYLINUX_ALIASES = {"manylinux1": "manylinux_2_5", "manylinux2010": "manylinux_2_12",
                     "manylinux2014": "manylinux_2_17"}


@dataclass(frozen=True)
class WheelPlan:
    """One wheel as planned.  ``policy`` is empty when the wheel is not repaired, and
    ``note`` then says why (shown in the plan and the build summary)."""

    dist: str  # the distribution name on the index (``llaisys-cu13``)
    version: str
    python_tag: str  # cp311 | cp39 | py3
    abi_tag: str  # cp311 | abi3 | none
    platform: str  # the tag the wheel is written with, before any repair
    policy: str = ""  # auto | manylinux_2_28 | "" (no repair)
    note: str = ""  # why the wheel stays as written, or what the repair does
    fix: str = ""
    exclude: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    torch: str = ""  # the torch release to pin when the binaries link libtorch
    classifiers: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    per_python: str = ""  # why the variant is (or is not) built once per Python
    toolkit: str = ""  # the CUDA toolkit whose runtime libraries come from NVIDIA's wheels
    variant: str = ""  # a variant wheel's label (``cu13_sm90``), last in its file name

    @property
    def tag(self) -> str:
        return f"{self.python_tag}-{self.abi_tag}-{self.platform}"

    @property
    def raw_name(self) -> str:
        """The file written before repair."""
        return f"{dist_name(self.dist)}-{self.version}-{self.tag}.whl"

    @property
    def name(self) -> str:
        """The final file name; ``*`` where auditwheel decides (``auto``).  A repaired
        wheel may carry a second, legacy alias (``manylinux_2_17_x86_64.manylinux2014…``)."""
        label = f"-{self.variant}" if self.variant else ""
        if not self.policy:
            return self.raw_name[:-len(".whl")] + label + ".whl"
        arch = self.platform.split("_", 1)[1]
        pol = "manylinux_*" if self.policy == "auto" else \
            MANYLINUX_ALIASES.get(self.policy, self.policy)
        return f"{dist_name(self.dist)}-{self.version}-{self.python_tag}-{self.abi_tag}-" \
               f"{pol}_{arch}{label}.whl"

    @property
    def glob(self) -> str:
        """A pattern the final file matches (aliases included, in either order:
        ``manylinux1_x86_64.manylinux_2_5_x86_64``; ``py3-none-any`` too for a ``py3-none``
        package, which is pure when it turns out to hold no binary)."""
        # a variant wheel ends in its label (each variant has a wheel folder of its own)
        end = f"-{self.variant}.whl" if self.variant else ".whl"
        if self.python_tag == "py3" and self.abi_tag == "none" and self.platform != "any":
            return f"{dist_name(self.dist)}-{self.version}-py3-none-*{end}"
        if self.policy == "auto":  # auditwheel may put a legacy alias first
            arch = self.platform.split("_", 1)[1]
            return f"{dist_name(self.dist)}-{self.version}-{self.python_tag}-" \
                   f"{self.abi_tag}-manylinux*_{arch}*{end}"
        return self.name[:-len(end)] + ("*" if self.policy else "") + end


def torch_pin(version: str) -> str:
    """``2.13.0+cpu`` → ``torch==2.13.*`` (any build of that release: cpu, cu130, …)."""
    try:
        v = Version(version)
    except InvalidVersion:
        return ""
    return f"torch=={v.major}.{v.minor}.*"


def plan_wheel(*, name: str, version: str, abi: str, python: str, limited_api: str,
               os_name: str, arch: str, native: bool, cross: str, backend_kind: str,
               archs: tuple[str, ...], tool_versions: dict[str, str], policy: str,
               auditwheel: bool, patchelf: bool, exclude: tuple[str, ...] = (),
               requires: tuple[str, ...] = (), torch: str = "") -> WheelPlan:
    """Decide a wheel from the variant's facts (no I/O).  ``cross`` names the target
    platform of a cross build ("" for a native one); ``tool_versions`` maps the host's
    tools to their versions; ``torch`` is the build interpreter's torch version."""
    dist = name
    classifiers: list[str] = []
    keywords: list[str] = []
    toolkit = tool_versions.get("nvcc", "") if backend_kind == "cuda" and native else ""
    naming = GPU_NAMING.get(backend_kind)
    if native and naming is not None:
        tool, suffix, classifier = naming
        major = tool_versions.get(tool, "").split(".")[0]
        if major.isdigit():
            dist = f"{name}-{suffix.format(major=major)}"
            keywords.append(suffix.format(major=major))
            if classifier:
                classifiers.append(classifier.format(major=major))
        keywords.extend(archs)
    if abi == "cpython" and python:
        cp = "cp" + python.replace(".", "")
        py_tag, abi_tag = cp, cp
        per_python = (f"one build per Python (python.abi: cpython): the extension is built "
                      f"against CPython {python}'s ABI")
    elif abi == "abi3":
        floor = limited_api or python
        py_tag, abi_tag = "cp" + floor.replace(".", ""), "abi3"
        per_python = (f"one build for every Python ≥ {floor} (python.abi: abi3): the "
                      f"extension uses the limited API, so one cp{floor.replace('.', '')}-abi3 "
                      f"wheel serves them all")
    else:
        py_tag, abi_tag = "py3", "none"
        per_python = ("one build for every Python (python.abi: none): the package carries "
                      "no extension module" if native else
                      "one build for every Python: a pure Python package")
    if not native:
        return WheelPlan(dist=dist, version=version, python_tag=py_tag, abi_tag=abi_tag,
                         platform="any", note="pure Python: no platform tag, nothing to "
                         "repair", requires=tuple(requires), per_python=per_python)
    platform = platform_tag(os_name, arch)
    base = WheelPlan(dist=dist, version=version, python_tag=py_tag, abi_tag=abi_tag,
                     platform=platform, requires=tuple(requires), torch=torch,
                     classifiers=tuple(classifiers), keywords=tuple(keywords),
                     per_python=per_python, toolkit=toolkit,
                     exclude=tuple(dict.fromkeys((*RUNTIME_PROVIDED, *exclusions(toolkit),
                                                  *exclude))))
    unfit = "package indexes such as PyPI refuse it"
    if os_name != "linux":
        return replace(base, note=f"{os_name} wheel: manylinux applies to Linux only")
    if policy == "none":
        return replace(base, note=f"stays {platform} (wheel.manylinux: none): {unfit}",
                     fix="set wheel.manylinux to auto or a policy to publish it")
    if cross:
        return replace(base, note=f"stays {platform}: cross-compiled for {cross}, and "
                     f"auditwheel checks a wheel on its own architecture; {unfit}",
                     fix=f"run `auditwheel repair` on a {cross} machine before publishing")
    missing = [t for t, ok in (("auditwheel", auditwheel), ("patchelf", patchelf)) if not ok]
    if missing:
        return replace(base, note=f"stays {platform}: {' and '.join(missing)} not found on "
                     f"PATH, so the wheel cannot be checked or repaired; {unfit}",
                     fix=f"pip install {' '.join(missing)}")
    target = MANYLINUX_ALIASES.get(policy, policy)
    what = "the oldest manylinux policy its binaries satisfy" if policy == "auto" else target
    lean = (f"; CUDA {toolkit}'s libraries come from NVIDIA's wheels (Requires-Dist)"
            if exclusions(toolkit) else "")
    return replace(base, policy=policy, note=f"auditwheel repairs it to {what}, leaving out "
                 f"the libraries the runtime provides{lean}")
