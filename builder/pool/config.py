"""sccache-dist's three configuration files, rendered from values (pure).

* the **scheduler**'s: where it listens, the token clients present (``client_auth``,
  type ``token``) and the key that signs the build servers' tokens (``server_auth``,
  type ``jwt_hs256``);
* a **build server**'s: where it listens, the scheduler's URL, its toolchain cache and
  build folder, the bubblewrap sandbox it compiles in (``builder.type = "overlay"``,
  which needs root) and its token from the scheduler's key (``scheduler_auth``);
* the **client**'s (what ``SCCACHE_CONF`` names for sccache): the scheduler's URL, its
  token and the toolchain cache.

Every file holding a token or key is written 0600 by the caller; values are quoted as
TOML basic strings (:func:`toml_string`), so that no value can add a key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["ServerConfig", "client_conf", "scheduler_conf", "server_conf", "toml_string"]


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (JSON's escaping is a subset TOML accepts)."""
    if any(ord(c) < 32 for c in value):
        raise ValueError(f"a control character in {value!r}")
    return json.dumps(value)


def scheduler_conf(addr: str, client_token: str, server_key: str) -> str:
    """The scheduler's configuration: it listens on ``addr`` (host:port)."""
    return (f"public_addr = {toml_string(addr)}\n\n"
            f"[client_auth]\ntype = \"token\"\ntoken = {toml_string(client_token)}\n\n"
            f"[server_auth]\ntype = \"jwt_hs256\"\nsecret_key = {toml_string(server_key)}\n")


@dataclass(frozen=True)
class ServerConfig:
    """What one build server needs to know."""

    addr: str  # host:port it listens on, as clients reach it
    scheduler: str  # the scheduler's URL
    toolchains: str  # folder of the client toolchains it was sent
    build_dir: str  # where its sandboxes are made
    bwrap: str  # the bubblewrap executable
    token: str  # its JWT from the scheduler's key
    bind: str = ""  # the address it binds, when not that of ``addr`` (e.g. 0.0.0.0:PORT)


def server_conf(c: ServerConfig) -> str:
    bind = f"bind_address = {toml_string(c.bind)}\n" if c.bind else ""
    return (f"cache_dir = {toml_string(c.toolchains)}\n"
            f"public_addr = {toml_string(c.addr)}\n{bind}"
            f"scheduler_url = {toml_string(c.scheduler)}\n\n"
            f"[builder]\ntype = \"overlay\"\nbuild_dir = {toml_string(c.build_dir)}\n"
            f"bwrap_path = {toml_string(c.bwrap)}\n\n"
            f"[scheduler_auth]\ntype = \"jwt_token\"\ntoken = {toml_string(c.token)}\n")


def client_conf(scheduler: str, token: str, toolchains: str, *,
                rewrite_includes: bool) -> str:
    """The client's configuration (``SCCACHE_CONF``).  ``rewrite_includes``: sccache's
    ``rewrite_includes_only`` — the client's preprocessor only inlines the headers
    (gcc's ``-fdirectives-only``, clang's ``-frewrite-includes``) and the build server
    expands the macros while it compiles."""
    return (f"[dist]\nscheduler_url = {toml_string(scheduler)}\ntoolchains = []\n"
            f"cache_dir = {toml_string(toolchains)}\n"
            f"rewrite_includes_only = {'true' if rewrite_includes else 'false'}\n\n"
            f"[dist.auth]\ntype = \"token\"\ntoken = {toml_string(token)}\n")
