"""Which git URLs a recipe may name: the transports builder lets git use, and where a
URL's secret may be (its user info, which git gets as an HTTP header)."""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qsl, urlsplit

from builder.util.secrets import QUERY_SECRETS

__all__ = ["GIT_PROTOCOLS", "git_url_problems"]

#: the git transports builder lets a source use (also set as GIT_ALLOW_PROTOCOL for every
#: git it runs): ``fd::``, ``ext::`` and other remote helpers run or wait on anything
GIT_PROTOCOLS = ("https", "http", "ssh", "git", "file")


def git_url_problems(url: str) -> list[tuple[str, str]]:
    """(problem, fix) for a git source URL ("" : no git source, no problem): a transport
    outside :data:`GIT_PROTOCOLS`, a token in the query.  scp-like and local paths pass."""
    helper = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)::", url)
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url)
    if helper or (scheme and scheme.group(1).lower() not in GIT_PROTOCOLS):
        name = (helper or scheme).group(1)  # type: ignore[union-attr]
        return [(f"git transport '{name}' is not allowed (builder allows "
                 f"{', '.join(GIT_PROTOCOLS)})", "give an https://, ssh:// or git:// URL or a "
                 "local path; remote helpers such as fd:: and ext:: run commands or wait on "
                 "a descriptor, forever")]
    if scheme:
        with contextlib.suppress(ValueError):
            if any(k.lower() in QUERY_SECRETS for k, _ in
                   parse_qsl(urlsplit(url).query, keep_blank_values=True)):
                return [("the git URL carries a token in its query",
                         "put the token in the URL's user info (https://TOKEN@host/repo.git): "
                         "builder gives it to git as an HTTP header, never on a command line")]
    return []
