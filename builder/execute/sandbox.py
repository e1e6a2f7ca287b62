"""``builder build --sandbox``: each step's commands run under bubblewrap (``bwrap``).

The sandbox makes "the key lists every input" checkable: a step sees only

* read-only: the system (``/usr``, ``/etc``, ``/opt`` and the ``/bin``-style links), the
  prefixes of the tools on the step's ``PATH`` and of the interpreters they run (a virtual
  environment and the Python it was made from), builder's own package (its compiler
  launchers), the variant's source folders (:attr:`Variant.sources`) and builder's state
  folder (dependency install trees, the Conan packages);
* writable: the state folder's ``build``, ``stage``, ``wheels`` and ``kernels`` folders,
  the Conan home when the step is given one (``CONAN_HOME``), the compiler cache's folder
  when it is given one, ``sources`` for a fetch, the memory broker's socket folder, and the
  memory cgroups where builder may write them;
* private: an empty ``HOME`` (a fetch sees the real one, read-only: git's and ssh's
  configuration), an empty ``/tmp`` and a ``TMPDIR`` of the step's own;
* no network (``--unshare-net``) except for a fetch or a download; its own process
  namespace, so that what a step leaves running (a compiler-cache server) ends with it.

Anything else — a header next to the source folder, a file in the user's home, a server
on the network — is absent, and the build fails loudly instead of making an unkeyed
binary.  The policy is a function of the step and its environment; :func:`wrap` returns
the argv, it runs nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from builder.errors import PlanError
from builder.plan.model import Step, Variant
from builder.util import writer
from builder.workspace.paths import Workspace

__all__ = ["NETWORK_KINDS", "Sandbox", "find_bwrap"]

#: the kinds of step that talk to a server (their outputs are checked by digest)
NETWORK_KINDS = frozenset({"fetch", "download"})
_SYSTEM = ("/usr", "/etc", "/opt")
_ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_GPU_DEVICES = ("/dev/kfd", "/dev/dri")
_SYSTEM_DIRS = ("/usr/", "/etc/", "/opt/")


def find_bwrap() -> str:
    """bubblewrap's path, or a plan error (exit 4) that says how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise PlanError("--sandbox needs bubblewrap (bwrap), which is not installed; "
                        "install it (Debian/Ubuntu: `apt-get install -y bubblewrap`, "
                        "Fedora: `dnf install bubblewrap`) or build without --sandbox")
    return found


def _prefix(path: str) -> str:
    """The installation a program belongs to: ``/venv/bin/conan`` → ``/venv``."""
    parent = os.path.dirname(os.path.dirname(path))
    return parent if parent not in ("", "/") else ""


def _covered(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


class Sandbox:
    """Wraps a step's commands in bubblewrap; ``variants``: the plan's, for their source
    folders."""

    def __init__(self, bwrap: str, ws: Workspace, variants: Iterable[Variant]) -> None:
        self.bwrap = bwrap
        self.ws = ws
        self.sources = {v.id: v.sources for v in variants}
        self._cgroup = next((p for p in ("/sys/fs/cgroup",) if os.access(p, os.W_OK)), "")

    def read_only(self, step: Step, argv0: str, env: Mapping[str, str]) -> list[str]:
        """The folders ``step`` may read besides the system's, in mount order."""
        roots: list[str] = []

        def add(path: str) -> None:
            if path and os.path.isdir(path) and not _covered(path, (*_SYSTEM, *roots)):
                roots.append(path)

        programs = [argv0]
        for folder in env.get("PATH", "").split(":"):
            add(_prefix(folder + "/x"))
            if os.path.isdir(folder):  # a virtual environment's interpreter runs the
                # Python it was made from
                with os.scandir(folder) as it:
                    programs += [e.path for e in it if e.name.startswith("python")]
        for prog in programs:
            if os.path.isabs(prog):
                add(_prefix(prog))
                add(_prefix(os.path.realpath(prog)))
        for entry in env.get("PYTHONPATH", "").split(":"):
            if not os.path.isabs(entry):  # "" or a relative entry: bwrap needs a path
                continue
            own = os.path.join(entry, "builder")  # builder itself, not the whole checkout
            add(own if os.path.isfile(os.path.join(own, "__init__.py")) else entry)
        # builder's own package, wherever the interpreter imports it from (an editable
        # install's finder points into a checkout): the steps' launchers import it
        add(str(Path(__file__).resolve().parents[1]))
        for src in self.sources.get(step.variant, ()):
            add(src)
        add(str(self.ws.state))
        return roots

    def writable(self, step: Step, env: Mapping[str, str]) -> list[str]:
        """The folders ``step`` may write (each created if missing)."""
        st = self.ws.state
        out = [str(st / n) for n in ("build", "stage", "wheels", "kernels")]
        if step.kind == "fetch":
            out.append(str(self.ws.sources))
        for name in ("CONAN_HOME", "CCACHE_DIR", "SCCACHE_DIR"):
            if env.get(name):
                out.append(env[name])
        broker = env.get("BUILDER_BROKER", "")
        if broker:
            out.append(os.path.dirname(broker))
        for p in out:  # builder's folders; a socket's or a cache's exists already
            if not os.path.isdir(p):
                writer.make_dirs(p)
        return out

    def wrap(self, step: Step, argv: tuple[str, ...], env: Mapping[str, str],
             cwd: Path) -> tuple[str, ...]:
        """``argv`` run under bubblewrap with ``step``'s view of the machine."""
        args = [self.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts"]
        if os.getuid() != 0:  # unprivileged: a user namespace makes the mounts possible
            args.append("--unshare-user")
        if step.kind not in NETWORK_KINDS:
            args.append("--unshare-net")
        for d in _SYSTEM:
            if os.path.isdir(d):
                args += ["--ro-bind", d, d]
        for link in _ROOT_LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                args += ["--ro-bind", link, link]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        args += ["--ro-bind", "/sys", "/sys"]
        if self._cgroup:  # the memory launcher's cgroups (cgroup.py)
            args += ["--bind", self._cgroup, self._cgroup]
        for dev in (*_GPU_DEVICES, *_nvidia_devices()):
            if os.path.exists(dev):
                args += ["--dev-bind", dev, dev]
        for d in self.read_only(step, argv[0], env):
            args += ["--ro-bind", d, d]
        for d in self.writable(step, env):
            args += ["--bind", d, d]
        home, tmp = env.get("HOME", ""), env.get("TMPDIR", "")
        if home and step.kind == "fetch" and os.path.isdir(home):
            args += ["--ro-bind", home, home]
        elif home:
            args += ["--tmpfs", home]
        if tmp:
            if not os.path.isdir(tmp):
                writer.make_dirs(tmp)
            args += ["--bind", tmp, tmp]
        args += ["--chdir", str(cwd), "--", *argv]
        return tuple(args)


def _nvidia_devices() -> list[str]:
    try:
        return sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    except OSError:
        return []

