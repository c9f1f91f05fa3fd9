"""The native API: ``POST /api/query`` and the explore routes, for applications and the page.

Every route answers from the project's current build (see :mod:`.projects`) and says which one in
the ``X-GraphRAG-Project`` and ``X-GraphRAG-Build`` headers; a query's body names the build too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphrag_assets.query.registry import method_names
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.serve import lookups
from graphrag_assets.serve.answers import Answered, Question, answer, stream_answer
from graphrag_assets.serve.errors import describe, error_body
from graphrag_assets.serve.lookups import Page
from graphrag_assets.serve.projects import Project
from graphrag_assets.serve.references import citations, references
from graphrag_assets.serve.server import SSE_HEADERS, build_headers, project_of, project_prefix, server_of, sse
from graphrag_assets.serve.snapshot import Snapshot

MAX_PAGE = 500
MAX_OFFSET = 1_000_000_000  # larger numbers are refused (400) rather than overflow a column
NEIGHBOURS_DRAWN = 60

router = APIRouter(prefix="/api")


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: str


class QueryRequest(BaseModel):
    """A question and how to answer it."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(description="The question.")
    # The registered methods (query/registry.py), read when a request is validated and when the
    # schema is drawn, so a method added to the registry is accepted without a change here.
    method: str = Field(
        "global",
        description="The query method.",
        json_schema_extra=lambda schema: schema.update(enum=list(method_names())),
    )
    community_level: int | None = Field(
        None,
        ge=0,
        description="Global: the level used (default query.global.community_level); local/DRIFT: the deepest level used.",
    )
    dynamic_selection: bool | None = Field(
        None, description="Global: let the model pick the relevant communities from the root down."
    )
    response_type: str | None = Field(None, max_length=200, description='Shape of the answer, e.g. "Single Paragraph".')
    context_only: bool = Field(
        False, description="Return the context and its records without writing an answer (no chat call)."
    )
    system_prompt: str | None = Field(
        None, description="Your instructions for the final answer (tone, language, format)."
    )
    conversation_history: list[Turn] = Field(
        default_factory=list, description="Earlier turns (local search uses them)."
    )
    stream: bool = Field(False, description="Answer as server-sent events: start, token…, result (or error).")

    @field_validator("method")
    @classmethod
    def _registered(cls, method: str) -> str:
        names = [repr(name) for name in method_names()]
        if repr(method) not in names:
            listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
            raise ValueError(f"Input should be {listed}")
        return method

    def question_asked(self) -> Question:
        options = QueryOptions(
            method=self.method,
            community_level=self.community_level,
            dynamic_selection=self.dynamic_selection,
            response_type=self.response_type,
            conversation_history=[t.model_dump() for t in self.conversation_history],
            context_only=self.context_only,
            system_prompt=self.system_prompt,
        )
        return Question(self.question, options)


def _result_body(project: Project, answered: Answered) -> dict[str, Any]:
    r = answered.result
    return {
        "project": project.name,
        "build": answered.snapshot.build.as_dict(),
        "method": r.method,
        "answer": r.answer,
        "llm_used": r.llm_used,
        "context_only": bool(r.details.get("context_only")),
        "references": references(r, project_prefix(project)),
        "citations": citations(r, project_prefix(project)),
        "context_text": r.context_text,
        "usage": r.usage.to_dict(),
        "warnings": r.warnings,
        "details": r.details,
    }


@router.post("/query", tags=["query"], summary="Ask a question (or retrieve its context only)")
async def query(body: QueryRequest, request: Request) -> Any:
    """The answer with structured references, the context text, usage and warnings; with
    ``stream: true``, server-sent events ``start``, ``token`` (``{"text"}``) … and ``result``
    (the same body), or ``error``."""
    project = project_of(request)
    question = body.question_asked()
    question.check(server_of(request).config.limits.max_question_chars)
    question.options.validate()
    snapshot = project.current()
    headers = build_headers(project, snapshot)
    if body.stream:
        return StreamingResponse(
            _query_events(project, question, snapshot),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, **headers},
        )
    return JSONResponse(_result_body(project, await answer(project, question, snapshot)), headers=headers)


async def _query_events(project: Project, question: Question, snapshot: Snapshot) -> AsyncIterator[bytes]:
    yield sse({"project": project.name, "build": snapshot.build.as_dict(), "method": question.options.method}, "start")
    try:
        async for item in stream_answer(project, question, snapshot):
            yield (
                sse(_result_body(project, item), "result")
                if isinstance(item, Answered)
                else sse({"text": item}, "token")
            )
    except Exception as exc:  # the response has started: the error goes in the stream
        yield sse(error_body(*describe(exc)), "error")


def _explore(request: Request, lookup, *args: Any) -> JSONResponse:
    project = project_of(request)
    snapshot = project.current()
    return JSONResponse(lookup(snapshot.data, *args), headers=build_headers(project, snapshot))


@router.get("/entities", tags=["explore"], summary="Find entities by name")
async def entities(
    request: Request,
    q: str | None = Query(
        None, max_length=200, description="Part of the name (any case); none: the most connected first."
    ),
    limit: int = Query(50, ge=1, le=MAX_PAGE),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> JSONResponse:
    return _explore(request, lookups.search_entities, q, Page(limit, offset))


@router.get("/entities/{ref}", tags=["explore"], summary="An entity and its neighbourhood (one page of relationships)")
async def entity(
    ref: str, request: Request, limit: int = Query(50, ge=1, le=MAX_PAGE), offset: int = Query(0, ge=0, le=MAX_OFFSET)
) -> JSONResponse:
    """``ref``: the number answers cite it by, its id, or its name. The relationships are the
    strongest first, ``limit`` at a time from ``offset`` (``next_offset`` is null on the last page)."""
    return _explore(request, lookups.entity_detail, ref, Page(limit, offset))


@router.get("/entities/{ref}/graph", tags=["explore"], summary="An entity's neighbourhood as graph view data")
async def entity_graph(
    ref: str, request: Request, limit: int = Query(NEIGHBOURS_DRAWN, ge=1, le=MAX_PAGE)
) -> JSONResponse:
    """The entity and its ``limit`` strongest neighbours, laid out for ``GraphView.mount``."""
    return _explore(request, lookups.neighbourhood_view, ref, limit)


@router.get("/relationships/{ref}", tags=["explore"], summary="A relationship")
async def relationship(ref: str, request: Request) -> JSONResponse:
    return _explore(request, lookups.relationship_detail, ref)


@router.get("/claims/{ref}", tags=["explore"], summary="A claim")
async def claim(ref: str, request: Request) -> JSONResponse:
    return _explore(request, lookups.claim_detail, ref)


@router.get("/sources/{ref}", tags=["explore"], summary="A source text (text unit) and its document")
async def source(ref: str, request: Request) -> JSONResponse:
    return _explore(request, lookups.source_detail, ref)


@router.get("/communities", tags=["explore"], summary="Communities, largest first, with their reports")
async def communities(
    request: Request,
    level: int | None = Query(None, ge=0, le=MAX_OFFSET, description="Only this level (0 is the coarsest)."),
    limit: int = Query(50, ge=1, le=MAX_PAGE),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> JSONResponse:
    return _explore(request, lookups.list_communities, level, Page(limit, offset))


@router.get("/reports/{ref}", tags=["explore"], summary="A community's report")
async def report(ref: str, request: Request) -> JSONResponse:
    """``ref``: the community number (what answers cite reports by) or the report's id."""
    return _explore(request, lookups.report_detail, ref)


@router.get(
    "/graph", tags=["explore"], summary="The community map and every community's entity graph (graph view data)"
)
async def graph(request: Request) -> JSONResponse:
    """What ``export --format html`` draws, for ``GraphView.mount``; computed once per build."""
    project = project_of(request)
    snapshot = project.current()
    data = await asyncio.to_thread(snapshot.community_map, f"{project.name}: knowledge graph")
    return JSONResponse(data, headers=build_headers(project, snapshot))


@router.get("/status", tags=["server"], summary="The projects, their builds and the server's limits")
async def status(request: Request) -> dict[str, Any]:
    server = server_of(request)
    selected = project_of(request)
    limits = server.config.limits
    return {
        "project": selected.name,
        "default_project": server.projects.default,
        "projects": [p.status() for p in server.projects.by_name.values()],
        "auth": server.config.api_key is not None,
        "limits": {
            "max_request_bytes": limits.max_request_bytes,
            "max_question_chars": limits.max_question_chars,
            "reload_interval_seconds": limits.reload_interval_seconds,
            "max_page": MAX_PAGE,
        },
    }
