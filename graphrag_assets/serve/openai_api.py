"""OpenAI-compatible chat: ``POST /v1/chat/completions`` (streamed or not) and ``GET /v1/models``.

Any client of OpenAI's API works against it (the ``openai`` package, Open WebUI, LibreChat, ...).
The model chooses the query method: ``graphrag-local``, ``graphrag-global``, ``graphrag-drift``,
``graphrag-basic``; ``NAME/graphrag-local`` chooses project ``NAME`` as well (``/v1/models`` lists
both forms). The last user message is the question; earlier user and assistant messages are the
conversation history, given to local search (the one engine that uses it); system (and developer)
messages become the system prompt of the final answer. Sampling parameters are accepted and
ignored: the project's settings decide them.

The references come as structured data as well as the inline ``[Data: …]`` citations: in the body's
``references`` field, and when streaming, in the chunk that carries ``finish_reason: "stop"``
(before the usage chunk and ``[DONE]``); the ``citations`` field next to it gives each cited
source passage with its document and character offsets (:func:`.references.citations`). A failure after streaming began arrives as a chunk with an
``error`` object, which OpenAI's clients raise as an error.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from graphrag_assets.query.registry import method_names, query_method
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.serve.answers import Answered, Question, answer, stream_answer
from graphrag_assets.serve.errors import ServeError, describe, error_body
from graphrag_assets.serve.projects import Project
from graphrag_assets.serve.references import citations, references
from graphrag_assets.serve.server import SSE_HEADERS, build_headers, project_of, project_prefix, server_of, sse
from graphrag_assets.serve.snapshot import Snapshot

MODEL_PREFIX = "graphrag-"
OWNER = "graphrag-assets"
SYSTEM_ROLES = ("system", "developer")

router = APIRouter(prefix="/v1", tags=["OpenAI-compatible chat"])


class ChatMessage(BaseModel):
    """One message; ``content`` is text or OpenAI's list of parts (text parts are used)."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completion request; fields this server does not use are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(
        description="graphrag-local | graphrag-global | graphrag-drift | graphrag-basic, optionally NAME/ for a project"
    )
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None


def parse_model(model: str, projects: list[str]) -> tuple[str | None, str]:
    """(project or None, method) of a model name, or a 404 naming the models there are."""
    project, _, name = model.rpartition("/")
    method = name.removeprefix(MODEL_PREFIX) if name.startswith(MODEL_PREFIX) else ""
    if method not in method_names() or (project and project not in projects):
        raise ServeError(
            404,
            f"the model {model!r} does not exist; use {', '.join(MODEL_PREFIX + m for m in method_names())} "
            "(GET /v1/models lists them).",
            "model_not_found",
        )
    return project or None, method


def conversation(messages: list[ChatMessage], method: str) -> tuple[str, QueryOptions]:
    """The question (last user message), the history (local search) and the system prompt."""
    last = messages[-1]
    if last.role != "user":
        raise ServeError(400, f"the last message must be the user's question, not a {last.role!r} message.")
    system = "\n\n".join(m.text() for m in messages if m.role in SYSTEM_ROLES and m.text().strip())
    history = [{"role": m.role, "content": m.text()} for m in messages[:-1] if m.role in ("user", "assistant")]
    options = QueryOptions(
        method=method,
        conversation_history=history if query_method(method).uses_conversation_history else (),
        system_prompt=system or None,
    )
    return last.text(), options


def _model_list(projects: list[str]) -> list[dict[str, Any]]:
    created = int(time.time())
    names = [f"{MODEL_PREFIX}{m}" for m in method_names()]
    names += [f"{p}/{MODEL_PREFIX}{m}" for p in projects for m in method_names()]
    return [{"id": n, "object": "model", "created": created, "owned_by": OWNER} for n in names]


@router.get("/models", summary="The models: one per query method (and per project)")
async def list_models(request: Request) -> dict[str, Any]:
    server = server_of(request)
    return {"object": "list", "data": _model_list(list(server.projects.by_name))}


@router.get("/models/{model_id:path}", summary="One model")
async def get_model(model_id: str, request: Request) -> dict[str, Any]:
    parse_model(model_id, list(server_of(request).projects.by_name))
    return {"id": model_id, "object": "model", "created": int(time.time()), "owned_by": OWNER}


def _usage(answered: Answered) -> dict[str, int]:
    u = answered.result.usage
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def _graphrag(project: Project, answered: Answered) -> dict[str, Any]:
    r = answered.result
    return {
        "project": project.name,
        "build": answered.snapshot.build.as_dict(),
        "method": r.method,
        "llm_used": r.llm_used,
        "warnings": r.warnings,
    }


@router.post("/chat/completions", summary="Ask a question (OpenAI chat completion, streamed or not)")
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Any:
    server = server_of(request)
    named, method = parse_model(body.model, list(server.projects.by_name))
    project = project_of(request, named)
    text, options = conversation(body.messages, method)
    question = Question(text, options)
    question.check(server.config.limits.max_question_chars)
    options.validate()
    snapshot = project.current()
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
    if body.stream:
        usage = bool((body.stream_options or {}).get("include_usage"))
        events = _chat_events(project, question, snapshot, (ident, created, body.model, usage))
        return StreamingResponse(
            events, media_type="text/event-stream", headers={**SSE_HEADERS, **build_headers(project, snapshot)}
        )
    answered = await answer(project, question, snapshot)
    return JSONResponse(
        {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": body.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answered.result.answer},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": _usage(answered),
            "references": references(answered.result, project_prefix(project)),
            "citations": citations(answered.result, project_prefix(project)),
            "graphrag": _graphrag(project, answered),
        },
        headers=build_headers(project, snapshot),
    )


async def _chat_events(
    project: Project, question: Question, snapshot: Snapshot, meta: tuple[str, int, str, bool]
) -> AsyncIterator[bytes]:
    ident, created, model, include_usage = meta

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        return sse(
            {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": choices,
                **extra,
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    try:
        async for item in stream_answer(project, question, snapshot):
            if isinstance(item, Answered):
                yield chunk(
                    {},
                    "stop",
                    references=references(item.result, project_prefix(project)),
                    citations=citations(item.result, project_prefix(project)),
                    graphrag=_graphrag(project, item),
                )
                if include_usage:
                    yield sse(
                        {
                            "id": ident,
                            "object": "chat.completion.chunk",
                            "created": created,
                            "model": model,
                            "choices": [],
                            "usage": _usage(item),
                        }
                    )
            else:
                yield chunk({"content": item})
    except Exception as exc:  # the response has started: the error goes in the stream
        yield sse(error_body(*describe(exc)))
    yield sse("[DONE]")
