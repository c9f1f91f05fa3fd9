"""What the routes share: the server's configuration and projects, and how a request picks its project."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from graphrag_assets.serve.config import ServeConfig
from graphrag_assets.serve.gate import scope_project
from graphrag_assets.serve.projects import Project, Projects
from graphrag_assets.serve.snapshot import Snapshot
from graphrag_assets.serve.throttle import KeyThrottle

BUILD_HEADER = "X-GraphRAG-Build"
PROJECT_HEADER = "X-GraphRAG-Project"


@dataclass
class Server:
    config: ServeConfig
    projects: Projects
    throttle: KeyThrottle


def server_of(request: Request) -> Server:
    return request.app.state.server


def project_of(request: Request, named: str | None = None) -> Project:
    """The project named (chat API: by the model), else by path prefix or header, else the default."""
    return server_of(request).projects.get(named or scope_project(request.scope, request.headers))


def project_prefix(project: Project) -> str:
    """The path prefix that names ``project`` (links in answers use it, so they work anywhere)."""
    return f"/p/{project.name}"


def build_headers(project: Project, snapshot: Snapshot) -> dict[str, str]:
    """Which project and build answered: on every response made from a build."""
    return {PROJECT_HEADER: project.name, BUILD_HEADER: snapshot.build.label}


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event (``data`` as JSON unless it is text already)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
