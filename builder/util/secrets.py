"""The one redactor: what a secret is, where its value may go, and the mask on every output.

A **secret** is known to builder by construction, never guessed from what a value looks like:

* the user info and the token-like query parameters of a URL (``https://user:TOKEN@host``,
  ``?token=…``, ``access_token=``, ``password=``, ``sig=``, …: :data:`QUERY_SECRETS`) —
  of a ``git:``/``url:`` source, of ``--cache-remote`` and of ``--index``;
* the value of a recipe option declared ``secret: true``;
* the value of an environment variable whose *name* says it holds one (:func:`is_credential`):
  ``*PASSWORD*``, ``*PASSWD*``, ``*SECRET*``, ``*API_KEY*``, ``*CREDENTIAL*``,
  ``*PRIVATE_KEY*``, ``TOKEN`` as a word (``GH_TOKEN``, ``TOKEN_X``; not ``TOKENIZERS_…``),
  names ending in ``_PAT``, ``_AUTH`` or ``_KEY``, and Conan's
  ``CONAN_LOGIN_USERNAME[_<REMOTE>]``.

Where a secret's value may go — the environment of the child that needs it, and nowhere else:

* :func:`remember` puts a value in this process's vault under a name and returns its
  *reference* ``${secret:NAME}``.  Plans, lockfiles, manifests, CMake caches and Conan options
  hold the reference; the subprocess runner replaces references by their values in a child's
  *environment* only (:func:`reveal`) and refuses an argv that holds a secret value
  (:func:`in_argv`), because ``ps`` and ``/proc/*/cmdline`` show every argv.
* :func:`split_url` is how a URL with a secret is stored: without its user info and secret
  query parameters, plus a reference to the whole URL for the one in-process reader.

And the mask: every line that leaves the process — the terminal (:class:`RedactingStream`,
installed on stdout and stderr by ``cli.main``), step logs, error messages, reports — passes
:func:`redact`, which replaces every remembered value, the value of every credential variable
set in the environment (4 characters or more), URL user info and secret query values by
``***``.
"""

from __future__ import annotations

import base64
import io
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TextIO
from urllib.parse import parse_qsl, urlencode, urlsplit

from builder.errors import BuilderError

__all__ = [
    "MASK",
    "QUERY_SECRETS",
    "RedactingStream",
    "SecretMissing",
    "basic_auth_header",
    "credential_names",
    "header_reference",
    "in_argv",
    "is_credential",
    "redact",
    "redact_url",
    "reference",
    "remember",
    "reveal",
    "split_url",
    "url_credentials",
    "url_secrets",
]

MASK = "***"

_SECRET = re.compile(r"PASSWORD|PASSWD|SECRET|API_?KEY|CREDENTIAL|PRIVATE_?KEY|"
                     r"(^|_)TOKEN(_|$)|_PAT$|_AUTH$|_KEY$|^CONAN_LOGIN_USERNAME", re.I)
#: values never masked although a credential variable holds them (a flag is no secret, and
#: masking every "false" would garble the output)
_PLAIN = frozenset({"true", "false", "none", "null", "yes", "no", "on", "off"})

#: query parameters whose value is a secret (compared case-insensitively)
QUERY_SECRETS = frozenset({
    "token", "access_token", "auth_token", "private_token", "id_token", "refresh_token",
    "password", "passwd", "pass", "pwd", "secret", "client_secret", "api_key", "apikey",
    "key", "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    "x-goog-signature", "x-goog-credential", "auth", "credentials"})

_REF = re.compile(r"\$\{secret:([A-Za-z0-9_.:/@+-]+)\}")
# user info in any URL-looking text: scheme://USER[:PASS]@
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<info>[^/\s@'\"<>]+)@")
_QUERY = re.compile(r"(?P<key>[?&;](?:" + "|".join(
    re.escape(k) for k in sorted(QUERY_SECRETS, key=len, reverse=True)) +
    r"))=(?P<value>[^&#\s'\"<>]+)", re.I)
_HEADER = re.compile(r"(?P<key>\bAuthorization:\s*(?:Basic|Bearer|token)\s+)(?P<value>\S+)",
                     re.I)

_vault: dict[str, str] = {}
_lock = threading.Lock()


class SecretMissing(BuilderError):
    """A plan names a secret this process was not given (a plan read back from a file)."""

    exit_code = 2


def is_credential(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return bool(_SECRET.search(name))


def credential_names(names: Iterable[str]) -> list[str]:
    return sorted(n for n in set(names) if is_credential(n))


def reference(name: str) -> str:
    return "${secret:" + name + "}"


def remember(name: str, value: str) -> str:
    """Keep ``value`` as the secret ``name`` (a later value replaces it); its reference."""
    with _lock:
        _vault[name] = value
    return reference(name)


def reveal(text: str) -> str:
    """``text`` with each ``${secret:NAME}`` replaced by its value: for a child's
    environment and the in-process reader of a URL only, never for anything written."""
    def value(m: re.Match[str]) -> str:
        with _lock:
            got = _vault.get(m.group(1))
        if got is None:
            raise SecretMissing(f"the plan refers to the secret {m.group(1)!r}, which this "
                                f"run was not given\n  fix: run the command from the recipe "
                                f"and options that define it (a plan read from a file holds "
                                f"references, never secret values)")
        return got
    return _REF.sub(value, text)


def _known() -> list[str]:
    with _lock:
        values = list(_vault.values())
    parts: set[str] = set()
    for v in values:
        inside = url_secrets(v) if "://" in v else []
        # a URL is masked in its secret parts only, so that messages still name it
        parts.update(inside or [v, v.rsplit(" ", 1)[-1]])
    return [p for p in parts if len(p) >= 4]


def _env_values(environ: Mapping[str, str]) -> list[str]:
    return [v for k, v in environ.items()
            if len(v) >= 4 and v.lower() not in _PLAIN and is_credential(k)]


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret builder knows of replaced by ``***``: remembered values,
    credential variables of ``environ`` (default: this process's environment), URL user
    info, secret query values and ``Authorization:`` header values."""
    if not text:
        return text
    values = {*_known(), *_env_values(os.environ if environ is None else environ)}
    for v in sorted(values, key=len, reverse=True):
        if v in text:
            text = text.replace(v, MASK)
    if "://" in text:
        text = _USERINFO.sub(lambda m: m["scheme"] + MASK + "@", text)
    if "=" in text:
        text = _QUERY.sub(lambda m: m[0] if m["value"].startswith(MASK)
                          else f"{m['key']}={MASK}", text)
    # the header's name checked first, case-folded as the pattern does ("author" has no
    # letter with a non-ASCII case variant): the pattern scanned alone was most of the
    # cost of redacting a large plan's JSON
    if ":" in text and "author" in text.lower():
        text = _HEADER.sub(lambda m: m["key"] + MASK, text)
    return text


def url_secrets(url: str) -> list[str]:
    """The secret parts of ``url``: its user name and password, secret query values."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    out = [p for p in (parts.username, parts.password) if p]
    out += [v for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if k.lower() in QUERY_SECRETS and v]
    return out


def url_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name, a password or a secret query parameter."""
    return bool(url_secrets(url))


def _strip(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if k.lower() not in QUERY_SECRETS]
    return parts._replace(netloc=parts.netloc.rpartition("@")[2],
                          query=urlencode(query)).geturl()


def redact_url(url: str) -> str:
    """``url`` fit to show: user info replaced by ``***``, secret query values masked."""
    return redact(url, {})


def split_url(url: str, name: str) -> tuple[str, str]:
    """(``url`` without its user info and secret query parameters — what builder stores and
    shows —, a reference to the whole URL remembered as ``name``, or "" when it holds no
    secret).  Its user info is also remembered as an HTTP header (:func:`header_reference`)."""
    if not url_credentials(url):
        return url, ""
    header = basic_auth_header(url)
    if header:
        remember(name + ".header", header)
    return _strip(url), remember(name, url)


def header_reference(ref: str) -> str:
    """The reference to the ``Authorization`` header of the URL that ``ref`` names."""
    m = _REF.fullmatch(ref)
    return reference(m.group(1) + ".header") if m else ""


def basic_auth_header(url: str) -> str:
    """``Authorization: Basic …`` for the user info of ``url`` ("" without): how git gets
    a source's credentials (``http.extraHeader`` from the environment, never the URL)."""
    try:
        parts = urlsplit(url)
        user, password = parts.username or "", parts.password or ""
    except ValueError:
        return ""
    if not (user or password):
        return ""
    from urllib.parse import unquote

    pair = f"{unquote(user)}:{unquote(password)}".encode()
    return "Authorization: Basic " + base64.b64encode(pair).decode()


def in_argv(argv: Sequence[str]) -> str:
    """The first remembered secret value found in ``argv`` (masked for the message), or ""."""
    known = _known()
    for a in argv:
        for v in known:
            if v in a:
                return redact(a)
    return ""


class RedactingStream(io.TextIOBase):
    """A text stream that passes everything written through :func:`redact` before the
    stream it wraps (the terminal): no secret reaches it, whoever prints."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(redact(s))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.inner, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.inner, "encoding", "utf-8"))

    def writable(self) -> bool:
        return True
