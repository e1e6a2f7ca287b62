"""Credentials stay in the environment of the tools that read them, nowhere else.

A *credential variable* is one whose name says it holds a secret: Conan's
``CONAN_PASSWORD[_<REMOTE>]`` and ``CONAN_LOGIN_USERNAME[_<REMOTE>]``, and any name containing
``PASSWORD``, ``PASSWD``, ``TOKEN``, ``SECRET``, ``API_KEY``, ``CREDENTIAL`` or ``PRIVATE_KEY``.

* A recipe may not substitute one (``${env.CONAN_PASSWORD_TEAM}`` would put the password
  into CMake caches, logs and plans): :func:`credential_names` finds them, the CLI refuses.
* A remote URL may not carry a user name or password (``https://u:p@host``): the fix is the
  two ``CONAN_…_<REMOTE>`` variables (:func:`url_credentials`).
* What builder writes from a child's output or environment is passed through
  :func:`redact`, which replaces the value of every credential variable set in the
  environment (4 characters or more) with ``***``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

__all__ = ["credential_names", "is_credential", "redact", "redact_url", "url_credentials"]

_SECRET = re.compile(r"PASSWORD|PASSWD|TOKEN|SECRET|API_?KEY|CREDENTIAL|PRIVATE_?KEY|"
                     r"^CONAN_LOGIN_USERNAME", re.I)


def is_credential(name: str) -> bool:
    return bool(_SECRET.search(name))


def credential_names(names: Iterable[str]) -> list[str]:
    return sorted(n for n in set(names) if is_credential(n))


def _values(environ: Mapping[str, str]) -> list[str]:
    return sorted({v for k, v in environ.items() if is_credential(k) and len(v) >= 4},
                  key=len, reverse=True)


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with the value of every credential variable replaced by ``***``."""
    for v in _values(os.environ if environ is None else environ):
        if v in text:
            text = text.replace(v, "***")
    return text


def url_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password (``scheme://user:pass@host``)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return bool(parts.username or parts.password)


def redact_url(url: str) -> str:
    """``url`` without its user name and password (for display)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not (parts.username or parts.password):
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return parts._replace(netloc=f"***@{host}").geturl()
