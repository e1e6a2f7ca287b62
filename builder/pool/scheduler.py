"""Talking to an sccache-dist scheduler over HTTP: is it there, how big is the pool, does
it take our token.  Bounded waits only; nothing here starts a process.

The scheduler answers ``GET /api/v1/scheduler/status`` without authentication with three
little-endian 64-bit counts (servers, CPUs, jobs in progress), and refuses a request to
``/api/v1/scheduler/alloc_job`` carrying a wrong client token with 401 before it reads the
request: an empty request tells a good token (400, no job allocated) from a bad one.
"""

from __future__ import annotations

import http.client
import ssl
import struct
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from builder.errors import DistError

__all__ = ["Status", "Unreachable", "check_token", "check_url", "status"]


class Unreachable(Exception):
    """Nothing answers at the scheduler's address (connection refused, timed out)."""


@dataclass(frozen=True)
class Status:
    servers: int
    cpus: int
    in_progress: int


def check_url(url: str) -> str:
    """``url`` normalised (no trailing slash); DistError when it is no http(s) URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DistError(f"--dist {url}", "not a scheduler URL",
                        "give http://HOST:PORT (what `builder dist start` prints)")
    if parts.username or parts.password:
        raise DistError(f"--dist {parts.hostname}", "the URL holds credentials",
                        "give the token in BUILDER_DIST_TOKEN or a 0600 file named by "
                        "BUILDER_DIST_TOKEN_FILE, never in the URL")
    return url.rstrip("/")


def _open(req: urllib.request.Request, timeout: float) -> bytes:
    """The answer's body; Unreachable when nothing answers (refused, timed out, a name
    that does not resolve), DistError when something answers that does not speak HTTP
    (a build server's port, another service)."""
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data: bytes = resp.read(4096)
            return data
    except urllib.error.HTTPError:
        raise
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (ConnectionResetError, ConnectionAbortedError,
                               http.client.HTTPException, ssl.SSLError)):
            raise DistError(f"--dist {req.full_url.rsplit('/api/', 1)[0]}",
                            f"something answers there that is no sccache-dist scheduler "
                            f"({reason!r})", "check the host and port: `builder dist "
                            "status` prints the scheduler's URL") from None
        raise Unreachable(str(reason)) from None


def status(url: str, timeout: float = 5.0) -> Status:
    """The pool as the scheduler at ``url`` sees it.  Unreachable: nothing answers;
    DistError: something answers that is no sccache-dist scheduler."""
    req = urllib.request.Request(f"{url}/api/v1/scheduler/status")
    try:
        data = _open(req, timeout)
    except urllib.error.HTTPError as exc:
        raise DistError(f"--dist {url}", f"this is no sccache-dist scheduler (HTTP "
                        f"{exc.code} for its status)",
                        "check the host and port: `builder dist status` prints the "
                        "scheduler's URL") from None
    if len(data) != 24:
        raise DistError(f"--dist {url}", "this is no sccache-dist scheduler (an unexpected "
                        "status answer)", "check the host and port")
    return Status(*struct.unpack("<QQQ", data))


def check_token(url: str, token: str, timeout: float = 5.0) -> None:
    """DistError when the scheduler refuses ``token``."""
    req = urllib.request.Request(f"{url}/api/v1/scheduler/alloc_job", data=b"",
                                 headers={"Authorization": f"Bearer {token}"}, method="POST")
    try:
        _open(req, timeout)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise DistError(f"--dist {url}", "the scheduler refuses the client token",
                            "set BUILDER_DIST_TOKEN (or BUILDER_DIST_TOKEN_FILE, a 0600 "
                            "file) to the scheduler's client token; for a pool started "
                            "here, `builder dist status` names its token file") from None
