"""What a server is started with: its projects, address, API key and limits, checked before it
listens.

Several projects on one server: ``--root`` given more than once, or ``--projects DIR`` (every
folder in it that holds a ``graphrag.yaml`` or an index database). A project's name is its
folder's name as given (a symbolic link's own name); the first one listed is the default for requests that choose none.

The API key comes from ``--api-key``, else ``$GRAPHRAG_SERVE_API_KEY`` (both read by the CLI),
else the projects' ``serve.api_key``; projects that set different keys are refused, as one
server has one key. The limits come from the first project's ``serve`` section; the host names
allowed besides loopback (:mod:`.hosts`) are ``--allowed-host`` and every project's
``serve.allowed_hosts``.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import SETTINGS_FILE, ServeSettings, Settings, load_settings

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
LOOPBACK_NAMES = {"localhost"}
HOST_NAME = re.compile(r"^(\*|[A-Za-z0-9._-]+|\[?[0-9A-Fa-f:.]+\]?)$")
DEFAULT_DATABASE = "data/graphrag.duckdb"


@dataclass(frozen=True)
class ServeConfig:
    """A checked server configuration (build it with :func:`build_config`)."""

    projects: tuple[Settings, ...]
    names: tuple[str, ...]
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    limits: ServeSettings = field(default_factory=ServeSettings)
    allowed_hosts: tuple[str, ...] = ()  # given ones only; loopback names and the address are always allowed

    @property
    def default_project(self) -> str:
        return self.names[0]


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost; False for 0.0.0.0, :: and every other address."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def looks_like_project(folder: Path) -> bool:
    return (folder / SETTINGS_FILE).is_file() or (folder / DEFAULT_DATABASE).is_file()


def _absolute(path: Path) -> Path:
    """Absolute and normalized, but not through symbolic links (their own name names the project)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def project_roots(roots: Sequence[Path], projects_dir: Path | None) -> list[Path]:
    """The project folders to serve, in the order given (a folder of projects: by name)."""
    found = [_absolute(r) for r in roots]
    if projects_dir is not None:
        folder = _absolute(projects_dir)
        if not folder.is_dir():
            raise UserError(f"{folder} is not a folder; pass --projects with a folder that holds project folders.")
        inside = sorted(p for p in folder.iterdir() if p.is_dir() and looks_like_project(p))
        if not inside:
            raise UserError(
                f"{folder} holds no project (a folder with {SETTINGS_FILE} or data/graphrag.duckdb); pass --root for each project instead."
            )
        found += inside
    return found or [_absolute(Path(os.environ.get("GRAPHRAG_ROOT") or Path.cwd()))]


def project_names(roots: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for root in roots:
        name = root.name
        if not NAME.match(name):
            raise UserError(
                f"the project folder name {name!r} cannot be used in a URL; rename it to letters, digits, '.', '_' or '-'."
            )
        if name in names:
            raise UserError(f"two projects are named {name!r} (folder names must differ); rename one of the folders.")
        names.append(name)
    return names


def resolve_api_key(given: str | None, projects: Sequence[Settings], names: Sequence[str]) -> str | None:
    """The server's key: ``given`` (flag or environment), else the one the projects agree on."""
    if given:
        return given
    keys = {name: s.serve.api_key for name, s in zip(names, projects) if s.serve.api_key}
    if len(set(keys.values())) > 1:
        raise UserError(
            f"the projects {', '.join(keys)} set different serve.api_key values and one server has one key; "
            "pass --api-key (or set GRAPHRAG_SERVE_API_KEY)."
        )
    return next(iter(keys.values()), None)


def build_config(
    roots: Sequence[Path],
    projects_dir: Path | None,
    host: str,
    port: int,
    api_key: str | None,
    allowed_hosts: Sequence[str] = (),
) -> ServeConfig:
    """Load every project's settings and check the address, the key and the names."""
    folders = project_roots(roots, projects_dir)
    names = project_names(folders)
    projects = [load_settings(folder) for folder in folders]
    key = resolve_api_key(api_key, projects, names)
    if key is None and not is_loopback(host):
        raise UserError(
            f"refusing to listen on {host} without an API key: anyone who can reach it could query the index; "
            "pass --api-key (or set GRAPHRAG_SERVE_API_KEY), or listen on 127.0.0.1."
        )
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, not {port}.")
    for name in allowed_hosts:
        if not HOST_NAME.match(name.strip()):
            raise UserError(f"--allowed-host takes a host name such as example.org (no scheme or path), not {name!r}.")
    hosts = dict.fromkeys([*allowed_hosts, *(h for s in projects for h in s.serve.allowed_hosts)])
    return ServeConfig(tuple(projects), tuple(names), host, port, key, projects[0].serve, tuple(hosts))
