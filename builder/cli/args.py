"""The ``builder`` command line's arguments: every subcommand, its options and their help
(what ``builder --help`` and ``builder <command> --help`` print)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from builder import __version__
from builder.resolve.request import OptionOverride

__all__ = ["EPILOG", "parser"]

EPILOG = """exit codes: 0 success; 1 a build step failed; 2 bad command line; 3 invalid recipe,
host-facts file or lockfile; 4 cannot be planned on this host (missing tool, unsupported arch,
a source the source policy refuses, a memory budget below the lightest job); 5 workspace locked
(--no-wait); 6 a Conan remote is unknown, down or refuses the credentials, or the --dist
URL is no scheduler or refuses the token; 7 refused to touch
something builder did not create; 8 a file or folder cannot be read or written; 130
interrupted."""


def _size(text: str) -> int:
    from builder.recipe.validate import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(text: str) -> int:
    """A job count: 1 … 4096 (0 keeps the default: the host's CPUs)."""
    try:
        n = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= n <= 4096:
        raise argparse.ArgumentTypeError(f"{n} is out of range: give 1 to 4096 (0: one per "
                                         f"CPU)")
    return n


_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
_PY_VERSION = re.compile(r"[1-9][0-9]*\.[0-9]+")


def _python(text: str) -> str:
    """A Python version X.Y, or 'all'; a path or a bare major version is refused (read as
    a version, it would match no recipe and the build would select nothing)."""
    if text == "all" or _PY_VERSION.fullmatch(text):
        return text
    if "/" in text or os.sep in text or text.startswith("python"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a version: --python takes X.Y (e.g. 3.12); builder finds that "
            f"interpreter itself (`builder host` lists the ones it found)")
    raise argparse.ArgumentTypeError(f"{text!r} is not a Python version: give X.Y, e.g. "
                                     f"3.12, or 'all'")


def _option(text: str) -> OptionOverride:
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"expected name=value or recipe:name=value, got "
                                         f"{text!r}")
    bad = next((c for c in value if c in "\n\r\0" or (ord(c) < 32 and c != "\t")), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"{name}: the value contains a control character "
                                         f"({bad!r}); give it on one line")
    recipe, colon, opt = name.partition(":")
    for part in ((recipe, opt) if colon else (name,)):
        if not _NAME.fullmatch(part):
            raise argparse.ArgumentTypeError(f"{name!r} is not an option name (letters, "
                                             f"digits, '_', '-', '.'; recipe:name for one "
                                             f"recipe)")
    return OptionOverride(recipe, opt, value) if colon else OptionOverride("", name, value)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="builder", description="Declarative builds of native GPU/ML libraries: YAML "
        "recipes → a plan you can read → Conan 2 + CMake/Ninja builds.", epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"builder {__version__}")
    p.add_argument("-C", "--project", type=Path, default=None, metavar="DIR",
                   help="project folder holding recipes/ (default: the current folder or the "
                        "nearest parent with a recipes/ folder)")
    p.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                   help="where builds, caches, logs and the Conan home live (default: "
                        "$BUILDER_STATE_DIR, else <project>/.builder)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    v = sub.add_parser("validate", help="check recipes against the schema and each other",
                       description="Validate recipe files (default: every recipe of the "
                       "project). Errors name file:line:col and a hint.")
    v.add_argument("recipes", nargs="*", help="recipe names or paths to .yaml files")

    h = sub.add_parser("host", help="show what this machine offers",
                       description="CPUs, memory budget, toolchains and their GPU archs, "
                       "Python interpreters.")
    h.add_argument("--format", choices=("text", "json"), default="text")
    h.add_argument("--memory-budget", type=_size, default=0, metavar="SIZE")
    h.add_argument("--dist", default=os.environ.get("BUILDER_DIST", ""), metavar="URL",
                   help="also show this sccache-dist scheduler's pool (default: $BUILDER_DIST)")

    def selection(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("recipes", nargs="*", help="recipe names or paths to .yaml files")
        sp.add_argument("--all", action="store_true", help="every recipe of the project")
        sp.add_argument("-b", "--backend", action="append", default=[], metavar="BACKEND",
                        help="only this backend: cpu, cuda, rocm, metal or one a recipe "
                             "names, such as arm (repeatable; default: all the recipe "
                             "declares)")
        sp.add_argument("-p", "--python", action="append", default=[], metavar="X.Y",
                        type=_python,
                        help="target Python version (repeatable; 'all' for every supported)")
        sp.add_argument("--build-type", action="append", default=[],
                        choices=("release", "debug", "relwithdebinfo"))
        sp.add_argument("-o", "--option", action="append", default=[], type=_option,
                        metavar="[RECIPE:]NAME=VALUE", help="set a recipe option")
        sp.add_argument("--skip-unsupported", action="store_true",
                        help="leave out archs the toolchain cannot build, and backends or "
                             "target platforms this host cannot build, shown as skipped, "
                             "instead of failing")
        sp.add_argument("--wheel-variants", action="store_true",
                        help="also build one wheel per GPU arch (a PEP 825 variant wheel, "
                             "e.g. cu13_sm90) besides the all-arch one (recipe: "
                             "wheel.variants)")
        sp.add_argument("--memory-budget", type=_size, default=0, metavar="SIZE",
                        help="memory the build may use, e.g. 6GiB (default: available memory "
                             "or the cgroup limit, less a reserve)")
        sp.add_argument("--compiler-cache", choices=("none", "ccache", "sccache"),
                        default=os.environ.get("BUILDER_COMPILER_CACHE", ""),
                        help="compile through a compiler cache (default: "
                             "$BUILDER_COMPILER_CACHE, else the recipe's build.compiler_cache, "
                             "else none)")
        sp.add_argument("--cache-remote", default=os.environ.get("BUILDER_CACHE_REMOTE", ""),
                        metavar="URL",
                        help="remote storage for the compiler cache, e.g. "
                             "redis://127.0.0.1:6379 (default: $BUILDER_CACHE_REMOTE: give a "
                             "URL with a password there, `ps` shows command lines)")
        sp.add_argument("--dist", default=os.environ.get("BUILDER_DIST", ""), metavar="URL",
                        help="compile on an sccache-dist pool through this scheduler (implies "
                             "--compiler-cache sccache; default: $BUILDER_DIST); its token "
                             "from $BUILDER_DIST_TOKEN or a 0600 file named by "
                             "$BUILDER_DIST_TOKEN_FILE: docs/dist.md")
        sp.add_argument("--conan-remote", default="", metavar="NAME",
                        help="Conan remote for requirements with `provider: remote`")
        sp.add_argument("-j", "--jobs", type=_count, default=0, help="parallel compile jobs "
                        "(default: usable CPUs)")
        sp.add_argument("--remote", default=os.environ.get("BUILDER_REMOTE", ""),
                        metavar="NAME", help="download variants published on this Conan "
                        "remote instead of building them (`builder remote add`; default: "
                        "$BUILDER_REMOTE); credentials from CONAN_LOGIN_USERNAME_<NAME> / "
                        "CONAN_PASSWORD_<NAME>")
        sp.add_argument("--remote-optional", action="store_true",
                        help="build locally when the remote is down or refuses us, instead "
                             "of failing")
        sp.add_argument("--env", action="append", default=[], metavar="NAME",
                        help="pass this variable of your environment to every step; its "
                             "value enters the key (repeatable; also $BUILDER_PASS_ENV=A,B). "
                             "Nothing else of your environment reaches a step: "
                             "docs/step-environment.md")
        sp.add_argument("--secret-env", action="append", default=[], metavar="NAME",
                        help="pass this variable (a credential, e.g. HF_TOKEN) to the steps "
                             "that build and test, when they start: never in the plan or the "
                             "key, masked in every output (repeatable; a recipe names its own "
                             "with secrets:): docs/secrets-and-timeouts.md")

    pl = sub.add_parser("plan", help="show exactly what a build would do (runs nothing)",
                        description="Resolve recipes for this host (or --host-facts) and show "
                        "every step with its exact command and status. With --all and no "
                        "--python, every supported Python version is planned.")
    selection(pl)
    pl.add_argument("--format", choices=("text", "json", "dot"), default="text")
    pl.add_argument("--host-facts", type=Path, metavar="FILE",
                    help="plan for the machine described by FILE (from `builder host "
                         "--format json`)")
    pl.add_argument("--no-commands", action="store_true", help="hide the commands")

    lk = sub.add_parser("lock", help="pin sources, toolchains, Conan refs, archs and options",
                        description="Write a lockfile for the selected recipes; `builder build "
                        "--lockfile FILE` then refuses to build anything that differs.")
    selection(lk)
    lk.add_argument("--output", type=Path, default=Path("builder.workspace.lock"), metavar="FILE")
    lk.add_argument("--force", action="store_true",
                    help="replace FILE even if builder did not write it")

    b = sub.add_parser("build", help="build recipes", description="Plan, then run the steps "
                       "that are not cached. Inputs unchanged: nothing runs.")
    selection(b)
    b.add_argument("--no-tests", action="store_true",
                   help="do not run the recipes' test steps (shown as skipped)")
    b.add_argument("--lockfile", type=Path, metavar="FILE",
                   help="refuse to build anything that differs from this lockfile")
    b.add_argument("-k", "--keep-going", action="store_true",
                   help="go on with independent steps after a failure")
    b.add_argument("--no-wait", action="store_true",
                   help="fail at once if another builder holds the workspace")
    b.add_argument("--sandbox", action="store_true",
                   help="run each step under bubblewrap: sources, tools and dependencies "
                        "read-only, no network except for fetches, a private HOME and tmp; "
                        "a read outside the declared inputs fails (docs/step-environment.md)")
    b.add_argument("-v", "--verbose", action="store_true", help="stream every command's output")
    b.add_argument("-q", "--quiet", action="store_true", help="print only failures and the "
                   "summary")

    pb = sub.add_parser("publish", help="upload built variants to a Conan remote, or their "
                        "wheels to a package index (--index)",
                        description="Upload the selected recipes' up-to-date variants (and "
                        "their dependencies) to a Conan remote: the Conan package, wheels "
                        "and kernel artifacts, found by the variant key. Another machine's "
                        "`builder build --remote NAME` then downloads instead of building.")
    selection(pb)
    pb.add_argument("--index", default="", metavar="URL",
                    help="upload the wheels to this Python package index instead, with twine "
                         "(e.g. https://upload.pypi.org/legacy/); credentials from "
                         "TWINE_USERNAME / TWINE_PASSWORD or the keyring, never the command "
                         "line")
    pb.add_argument("--index-dir", default="", metavar="DIR", type=str,
                    help="write the wheels into a static PEP 503 index folder instead "
                         "(DIR/simple/...), with hashes and, for variant wheels, the "
                         "release's variants.json: serve it with any web server")
    ds = sub.add_parser("dist", help="start, show or stop an sccache-dist pool on this "
                        "machine", description="A scheduler and N build servers on this "
                        "machine, each server in a memory cgroup capped at its budget and on "
                        "CPUs of its own (root: the servers sandbox compiles with "
                        "bubblewrap). `builder build --dist URL` then compiles on it "
                        "(docs/dist.md).")
    ds_sub = ds.add_subparsers(dest="dist_command", metavar="ACTION", required=True)
    dst = ds_sub.add_parser("start", help="start a scheduler and build servers")
    dst.add_argument("--servers", type=_count, default=2, help="build servers (default 2)")
    dst.add_argument("--cores", type=_count, default=1, help="CPUs per server (default 1)")
    dst.add_argument("--memory", type=_size, default=2 << 30, metavar="SIZE",
                     help="memory cap and declared budget per server (default 2GiB)")
    dst.add_argument("--port", type=int, default=10600,
                     help="the scheduler's port; server i listens on PORT+i (default 10600)")
    dst.add_argument("--bind", default="127.0.0.1", metavar="ADDR",
                     help="the address they listen on (default 127.0.0.1)")
    dst.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                     help="how long to wait for every server to register (default 60)")
    dss = ds_sub.add_parser("status", help="the pool started here")
    dss.add_argument("--format", choices=("text", "json"), default="text")
    ds_sub.add_parser("stop", help="stop the pool started here")
    dsv = ds_sub.add_parser("server", help="print how another host joins the pool as a build "
                            "server (starts nothing)",
                            description="The commands and server.conf that make HOST a build "
                            "server of the pool: its token (made where the scheduler's "
                            "configuration is), its configuration, its memory cap, and its "
                            "entry in the clients' pool file. Nothing is started or written.")
    dsv.add_argument("addr", metavar="HOST:PORT", help="where the new server listens, as "
                     "clients and the scheduler reach it")
    dsv.add_argument("--scheduler", default="", metavar="URL",
                     help="the scheduler's URL (default: the pool started here)")
    dsv.add_argument("--cores", type=_count, default=1, help="CPUs it may use (default 1)")
    dsv.add_argument("--memory", type=_size, default=2 << 30, metavar="SIZE",
                     help="its memory cap and declared budget (default 2GiB)")
    dsv.add_argument("--name", default="", help="its name in the pool file (default: HOST)")
    dsv.add_argument("--format", choices=("text", "json"), default="text")

    rm = sub.add_parser("remote", help="configure the Conan remotes builder may use",
                        description="Add, list or remove remotes in builder's project-local "
                        "Conan home (no remote is configured by default: builds are offline).")
    rm_sub = rm.add_subparsers(dest="remote_command", metavar="ACTION", required=True)
    ra = rm_sub.add_parser("add", help="add a remote: NAME URL")
    ra.add_argument("name")
    ra.add_argument("url")
    ra.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    rm_sub.add_parser("list", help="list the configured remotes")
    rr = rm_sub.add_parser("remove", help="remove a remote")
    rr.add_argument("name")

    mx = sub.add_parser("matrix", help="print the CI matrix (backend × Python × runner)",
                        description="The CI jobs for the recipes: one per (backend, Python) "
                        "that an extension recipe (python.abi: cpython) needs, and one per "
                        "backend for Python-independent recipes; each with its runner, its "
                        "nox session and a CPU-time estimate from the build history.")
    mx.add_argument("recipes", nargs="*", help="recipe names or paths (default: every recipe)")
    mx.add_argument("--format", choices=("text", "json", "github"), default="text",
                    help="github: {\"include\": [...]} for a workflow's strategy.matrix")
    mx.add_argument("--write-workflow", action="store_true",
                    help="write .github/workflows/build.yml (one job per matrix entry, each "
                         "running its nox session)")
    mx.add_argument("--force", action="store_true",
                    help="replace the workflow file even if builder did not write it")

    rp = sub.add_parser("report", help="an HTML page (or JSON) about the last build",
                        description="Timeline of compile jobs per slot, memory over time "
                        "against the budget, translation units by peak memory and time, plan "
                        "summary and cache hits — one self-contained page, no network.")
    rp.add_argument("--format", choices=("html", "json"), default="html")
    rp.add_argument("-o", "--output", type=Path, metavar="FILE",
                    help="where to write the page (default: .builder/report.html)")
    rp.add_argument("--open", action="store_true", help="open it in a browser")
    rp.add_argument("--force", action="store_true",
                    help="replace FILE even if builder did not write it")

    ca = sub.add_parser("cache", help="disk use of the state folder; prune what no build "
                        "needs", description="`info`: sizes per kind (sources, builds, stage, "
                        "installs, kernel artifacts, wheels, Conan packages, logs, leftovers "
                        "of interrupted builds) and per recipe. `prune`: remove what is not "
                        "needed — never the newest complete install of each variant, its "
                        "build folder, what the lockfile pins, or published kernels.")
    ca.add_argument("action", choices=("info", "prune"))
    ca.add_argument("--format", choices=("text", "json"), default="text")
    ca.add_argument("--max-size", metavar="SIZE", help="prune: remove unneeded items, oldest "
                    "first, until the state folder is no larger than SIZE (e.g. 10GiB)")
    ca.add_argument("--older-than", metavar="AGE", help="prune: only items not written for "
                    "AGE (e.g. 30d, 12h)")
    ca.add_argument("--dry-run", action="store_true", help="prune: only list what would go")
    ca.add_argument("--lockfile", type=Path, metavar="FILE", help="keep every variant this "
                    "lockfile pins (default: builder.workspace.lock in the project, when present)")
    ca.add_argument("--no-wait", action="store_true",
                    help="prune: fail at once if a build holds the workspace")

    vf = sub.add_parser("verify", help="check every installed file against its manifest",
                        description="Read every file of every install tree and published "
                        "kernel tree and compare it with the sha256 its manifest recorded "
                        "(and that no file is missing or added). Exit 1 if any differs.")
    vf.add_argument("--format", choices=("text", "json"), default="text")

    sc = sub.add_parser("schema", help="print the recipe JSON Schema (or its reference table)")
    sc.add_argument("--format", choices=("json", "markdown"), default="json")
    return p
