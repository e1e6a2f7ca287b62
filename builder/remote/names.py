"""What a Conan remote's name and URL may be, checked before either reaches Conan.

A name is passed to ``conan remote add``, ``conan install -r`` and ``conan upload -r`` as
an argument: one starting with ``-`` would be read as an option, an empty one or one with
spaces or control characters is a remote nobody can name again.  A URL is one Conan can
reach: ``http`` or ``https`` with a host (an ``ftp://`` or bare word is accepted by Conan
and fails at the first build, far from where it was typed)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from builder.errors import UsageError

__all__ = ["check_remote_name", "check_remote_url"]

#: letters, digits, '_', '-', '.'; starting with a letter or digit; Conan's own remotes
#: (conancenter) and every name in its docs fit
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_remote_name(name: object, what: str = "remote name") -> str:
    """``name`` if it can name a remote, else a UsageError saying what a name may be."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        shown = repr(name) if isinstance(name, str) else "missing"
        raise UsageError(f"{what} {shown} is not a remote name: use 1 to 64 letters, digits, "
                         f"'_', '-' or '.', starting with a letter or digit (e.g. team-cache)")
    return name


def check_remote_url(url: object) -> str:
    """``url`` if it is an http(s) URL with a host, else a UsageError with an example."""
    example = "e.g. https://conan.example.com/artifactory/api/conan/team"
    if not isinstance(url, str) or not url:
        raise UsageError(f"a remote needs a URL ({example})")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise UsageError(f"remote URL {url!r} contains a space or control character")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise UsageError(f"remote URL {url!r} cannot be read: {exc} ({example})") from None
    if parts.scheme not in ("http", "https"):
        got = f"'{parts.scheme}://'" if parts.scheme else "no scheme"
        raise UsageError(f"remote URL {url!r} has {got}: a Conan remote is reached over "
                         f"http:// or https:// ({example})")
    if not parts.hostname:
        raise UsageError(f"remote URL {url!r} names no host ({example})")
    return url
