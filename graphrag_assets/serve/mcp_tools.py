"""The tools the MCP server offers an agent: what each takes, what it says about itself, what it does.

Every tool reads a served project (:mod:`.projects`): its current build for searches and look-ups,
its database through the read-only SQL gate for ``sql``. The search tools take their method list
from the query registry (read as the module's ``METHODS`` when the server is built), so a registered method is offered without a
change here. Results are JSON objects (MCP "structured content"); searches list the records their
answer rests on with the value the answer cites them by and the ``show_*`` tool that returns each
one whole.

The descriptions are written for a model choosing between tools: what the tool is for, when to
prefer another one, and what comes back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import ServeSettings
from graphrag_assets.query import registry
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.serve import lookups
from graphrag_assets.serve.answers import Question, answer
from graphrag_assets.serve.lookups import Page
from graphrag_assets.serve.native_api import MAX_PAGE
from graphrag_assets.serve.projects import Project, Projects
from graphrag_assets.serve.references import citations, references
from graphrag_assets.storage.readonly_sql import run_readonly_query

MAX_SQL_ROWS = 1_000
SHOW_TOOLS = {
    "reports": "show_community",
    "entities": "show_entity",
    "relationships": "show_relationship",
    "claims": "show_claim",
    "sources": "show_source",
}


class OnProject(BaseModel):
    model_config = ConfigDict(extra="forbid")
    project: str | None = Field(
        None, description="The project to use (see list_projects); default: the server's default project."
    )


class Ref(OnProject):
    ref: str = Field(min_length=1, max_length=500, description="The record's number as answers cite it, or its id.")


class EntityRef(OnProject):
    ref: str = Field(
        min_length=1, max_length=500, description="The entity's number as answers cite it, its id, or its exact name."
    )
    relationships: int = Field(20, ge=1, le=MAX_PAGE, description="How many of its strongest relationships to list.")


class EntityName(OnProject):
    name: str = Field(min_length=1, max_length=200, description="Part of the entity's name or an alias (any case).")
    limit: int = Field(20, ge=1, le=MAX_PAGE, description="How many entities to return at most.")


class SqlQuery(OnProject):
    query: str = Field(min_length=1, description="One reading SQL statement (DuckDB dialect).")
    max_rows: int = Field(100, ge=1, le=MAX_SQL_ROWS, description="How many rows to return at most.")


class SearchBase(OnProject):
    question: str = Field(description="The question, in the user's words.")
    community_level: int | None = Field(
        None, ge=0, description="Global: the level used; local/DRIFT: the deepest level used (0 is the coarsest)."
    )


def search_arguments(name: str, with_response_type: bool) -> type[BaseModel]:
    """The search tools' arguments, with the methods registered now as the choices of ``method``."""
    names = registry.method_names()
    fields: dict[str, Any] = {
        "method": (
            Literal[names],  # type: ignore[valid-type]
            Field(names[0], description="The query method (see the tool's description)."),
        )
    }
    if with_response_type:
        fields["response_type"] = (
            str | None,
            Field(
                None,
                max_length=200,
                description='Shape of the answer, e.g. "Single Paragraph" or "List of 3-7 Points".',
            ),
        )
    return create_model(name, __base__=SearchBase, **fields)


def _methods_text() -> str:
    return "\n".join(f"- {m.name}: {m.help}" for m in registry.METHODS)


@dataclass(frozen=True)
class Call:
    """One tool call: its checked arguments and the project they name."""

    arguments: Any
    project: Project
    limits: ServeSettings
    projects: Projects


@dataclass(frozen=True)
class McpTool:
    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Call], Awaitable[dict[str, Any]]]


# --- searches ------------------------------------------------------------------------------------


def _question(call: Call, context_only: bool) -> Question:
    a = call.arguments
    options = QueryOptions(
        method=a.method,
        community_level=a.community_level,
        response_type=getattr(a, "response_type", None),
        context_only=context_only,
    )
    question = Question(a.question, options)
    question.check(call.limits.max_question_chars)
    options.validate()
    return question


def _records(project: Project, result: Any) -> list[dict[str, Any]]:
    """The context's records, by kind in context order (``rank`` 1 first), with how to show each."""
    out = []
    for kind, rows in references(result, f"/p/{project.name}").items():
        for rank, row in enumerate(rows, start=1):
            out.append(
                {
                    "kind": kind,
                    "rank": rank,
                    "citation": row["citation"],
                    "id": row["id"],
                    "title": row["title"],
                    "cited": row["cited"],
                    "show": {"tool": SHOW_TOOLS[kind], "ref": row["citation"]},
                }
            )
    return out


async def _search(call: Call) -> dict[str, Any]:
    snapshot = call.project.current()
    answered = await answer(call.project, _question(call, context_only=False), snapshot)
    r = answered.result
    return {
        "project": call.project.name,
        "build": snapshot.build.as_dict(),
        "method": r.method,
        "answer": r.answer,
        "llm_used": r.llm_used,
        "references": _records(call.project, r),
        "citations": [{k: v for k, v in c.items() if k != "href"} for c in citations(r, f"/p/{call.project.name}")],
        "usage": r.usage.to_dict(),
        "warnings": list(r.warnings),
    }


async def _search_context(call: Call) -> dict[str, Any]:
    snapshot = call.project.current()
    answered = await answer(call.project, _question(call, context_only=True), snapshot)
    r = answered.result
    records = [{k: v for k, v in row.items() if k != "cited"} for row in _records(call.project, r)]
    return {
        "project": call.project.name,
        "build": snapshot.build.as_dict(),
        "method": r.method,
        "records": records,
        "context_text": r.context_text,
        "warnings": list(r.warnings),
    }


# --- look-ups ------------------------------------------------------------------------------------


def _lookup(call: Call, find: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    snapshot = call.project.current()
    return {"project": call.project.name, "build": snapshot.build.as_dict(), **find(snapshot.data, *args)}


async def _find_entities(call: Call) -> dict[str, Any]:
    return _lookup(call, lookups.search_entities, call.arguments.name, Page(call.arguments.limit))


async def _show_entity(call: Call) -> dict[str, Any]:
    return _lookup(call, lookups.entity_detail, call.arguments.ref, Page(call.arguments.relationships))


async def _show_community(call: Call) -> dict[str, Any]:
    return _lookup(call, lookups.report_detail, call.arguments.ref)


async def _show_source(call: Call) -> dict[str, Any]:
    return _lookup(call, lookups.source_detail, call.arguments.ref)


async def _show_relationship(call: Call) -> dict[str, Any]:
    return _lookup(call, lookups.relationship_detail, call.arguments.ref)


async def _show_claim(call: Call) -> dict[str, Any]:
    return _lookup(call, lookups.claim_detail, call.arguments.ref)


# --- SQL and projects ----------------------------------------------------------------------------


async def _sql(call: Call) -> dict[str, Any]:
    """Through the same gate as ``graphrag-assets sql``, never with file access: an agent reaching
    the server must not read the machine's files through DuckDB."""
    database = call.project.settings.database_path
    try:
        frame = await asyncio.to_thread(run_readonly_query, database, call.arguments.query)
    except UserError as exc:  # it names the database file: as clients are told it, not the machine's path
        raise UserError(str(exc).replace(str(database), _shown_database(call.project))) from None
    shown = frame.head(call.arguments.max_rows)
    return {
        "project": call.project.name,
        "columns": [{"name": name, "type": str(dtype)} for name, dtype in frame.schema.items()],
        "rows": json.loads(shown.write_json()),
        "row_count": frame.height,
        "truncated": frame.height > shown.height,
    }


def _shown_database(project: Project) -> str:
    database = project.settings.database_path
    try:
        return f"{project.shown_root}/{database.relative_to(project.settings.root).as_posix()}"
    except ValueError:
        return database.name


async def _list_projects(call: Call) -> dict[str, Any]:
    return {
        "default_project": call.projects.default,
        "projects": [p.status() for p in call.projects.by_name.values()],
        "methods": [{"name": m.name, "description": m.help} for m in registry.METHODS],
        "max_question_chars": call.limits.max_question_chars,
    }


# --- the list ------------------------------------------------------------------------------------


def mcp_tools() -> tuple[McpTool, ...]:
    """The tools, built now (the search tools' method choices are the registry's at this moment)."""
    methods = _methods_text()
    cites = (
        "The answer cites records inline, as [Data: Entities (3); Sources (3f9a2c1b)]; 'references' lists every "
        "record of the context with its kind, the value it is cited by, its title, whether the answer cites it, "
        "and the show_* tool and ref that return it whole; 'citations' gives each cited source passage with its "
        "document id, title, file path, record number (csv/json/jsonl) and the start/end character offsets of the "
        "quoted text in the original document."
    )
    return (
        McpTool(
            "search",
            "Answer a question from the indexed documents",
            "Answer a question from the project's indexed documents (a GraphRAG knowledge graph: entities, "
            "relationships, community reports and the source texts), with citations. Use it for questions about "
            f"what the documents say. Methods:\n{methods}\n{cites} May call a language model (cost, seconds).",
            search_arguments("SearchArguments", with_response_type=True),
            _search,
        ),
        McpTool(
            "search_context",
            "Retrieve the ranked records for a question (no model call)",
            "Retrieve what a search would answer from, without writing an answer and without calling a language "
            "model: the records ranked for the question (reports, entities, relationships, claims, sources; rank 1 "
            "first in each kind) and the context text built from them. Use it to read the evidence yourself, or "
            f"when an answer is not needed. Methods:\n{methods}",
            search_arguments("SearchContextArguments", with_response_type=False),
            _search_context,
        ),
        McpTool(
            "find_entities",
            "Find entities by name",
            "Find entities (people, places, organisations, concepts) of the knowledge graph whose name or alias "
            "contains the text, best matches first, with their number, type, degree and a short description. Use "
            "it to get the ref for show_entity.",
            EntityName,
            _find_entities,
        ),
        McpTool(
            "show_entity",
            "Show an entity and its neighbourhood",
            "Show one entity of the knowledge graph: its full description, aliases, its strongest relationships "
            "(with the entity at the other end), the communities it belongs to and the source texts it was "
            "found in.",
            EntityRef,
            _show_entity,
        ),
        McpTool(
            "show_community",
            "Show a community's report",
            "Show the report of one community (a cluster of related entities): title, summary, full text, rating "
            "and findings. 'ref' is the community number, which answers cite as [Data: Reports (N)].",
            Ref,
            _show_community,
        ),
        McpTool(
            "show_source",
            "Show a source text",
            "Show one source text (a chunk of an input document) whole, with its document (id, title, path) and "
            "position. 'ref' is the short id answers cite as [Data: Sources (3f9a2c1b)], or the full id.",
            Ref,
            _show_source,
        ),
        McpTool(
            "show_relationship",
            "Show a relationship",
            "Show one relationship between two entities: both ends, description, weight and the source texts it "
            "was found in. 'ref' is the number answers cite as [Data: Relationships (N)].",
            Ref,
            _show_relationship,
        ),
        McpTool(
            "show_claim",
            "Show a claim",
            "Show one claim (a statement about an entity, with its status and dates) and its source text. 'ref' "
            "is the number answers cite as [Data: Claims (N)].",
            Ref,
            _show_claim,
        ),
        McpTool(
            "sql",
            "Run a read-only SQL query on the index",
            "Run one read-only SQL statement (DuckDB: SELECT, WITH, SHOW, DESCRIBE, EXPLAIN) on the project's "
            "index database; statements that change data and reading files are refused. Use it for counts, "
            "lists and joins the other tools do not give; 'SHOW TABLES' lists the tables (entities, "
            "relationships, communities, community_reports, text_units, documents, ...). Returns the columns, "
            "up to max_rows rows and the total row count.",
            SqlQuery,
            _sql,
        ),
        McpTool(
            "list_projects",
            "List the projects",
            "List the projects this server answers for (the default first), each with its state, current build, "
            "record counts and whether a language model is configured; also the query methods and the longest "
            "question accepted. Call it first when unsure which project to use.",
            OnProject,
            _list_projects,
        ),
    )
