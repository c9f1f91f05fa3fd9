"""Tiny calls that find out what an endpoint and model can do (``graphrag-assets doctor``).

The chat probe asks a one-word question twice (reachability, latency of a cold and a warm call,
the token-limit parameter and temperature, which the client adapts to on refusal), then asks for
a JSON object with ``response_format`` json_object and with json_schema, then streams the one-word
question (usage in streams). The model list is read for a context window where the server reports
one (vLLM's ``max_model_len``, LM Studio's and OpenRouter's context lengths). The embedding probe
embeds one short text (reachability, vector size, base64, ``dimensions``).

What is known about the endpoint is forgotten first, so the result is what the server does now;
it is then written to the project's ``llm_capabilities`` table for every later run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.core.errors import LLMError
from graphrag_assets.llm.capabilities import Capabilities
from graphrag_assets.llm.chat import OpenAIChatModel
from graphrag_assets.llm.client import OpenAIModel
from graphrag_assets.llm.embeddings import OpenAIEmbeddingModel
from graphrag_assets.llm.types import ChatOptions, JsonSchema
from graphrag_assets.prompts.templates import load_prompt

PURPOSE = "doctor"
PROBE_MAX_TOKENS = 1024  # generous: a reasoning model spends tokens before it answers
PROBE_SCHEMA = JsonSchema(
    "ready",
    {
        "type": "object",
        "properties": {"ready": {"type": "boolean"}},
        "required": ["ready"],
        "additionalProperties": False,
    },
)
CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


@dataclass
class ProbeResult:
    """What the probes of one endpoint found; ``error`` is set when the endpoint cannot be used."""

    kind: str  # chat | embedding
    model: str
    url: str
    error: str | None = None
    error_kind: str = ""
    first_seconds: float | None = None
    warm_seconds: float | None = None
    vector_size: int | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


def _user(name: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": load_prompt(name).text.strip()}]


async def _timed(coroutine: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await coroutine
    return result, time.perf_counter() - started


async def _context_window(model: OpenAIModel) -> int | None:
    """The window the model list reports for this model, if the server lists one."""
    state = await model.loop_state()
    try:
        page = await state.client.models.list()
    except Exception:  # many servers list nothing useful (or refuse): the window stays unknown
        return None
    for entry in getattr(page, "data", None) or []:
        if getattr(entry, "id", None) != model.model:
            continue
        extra = entry.model_extra or {}
        for name in CONTEXT_FIELDS:
            value = extra.get(name)
            if isinstance(value, int) and value > 0:
                return value
    return None


async def probe_chat(model: OpenAIChatModel) -> ProbeResult:
    result = ProbeResult("chat", model.model, model.endpoint.url)
    store = model.services.capabilities
    store.reset(model.key)
    limited = ChatOptions(max_tokens=PROBE_MAX_TOKENS, use_cache=False)
    try:
        first, result.first_seconds = await _timed(model.chat(_user("doctor_ready"), purpose=PURPOSE, options=limited))
        _, result.warm_seconds = await _timed(model.chat(_user("doctor_ready"), purpose=PURPOSE, options=limited))
        if not first.text.strip():
            result.notes.append(
                "the model gave an empty answer to a one-word question (a reasoning model may need a larger token limit)"
            )
        json_object = ChatOptions(json_mode=True, max_tokens=PROBE_MAX_TOKENS, use_cache=False)
        await model.chat(_user("doctor_json"), purpose=PURPOSE, options=json_object)
        schema = ChatOptions(json_schema=PROBE_SCHEMA, max_tokens=PROBE_MAX_TOKENS, use_cache=False)
        await model.chat(_user("doctor_json"), purpose=PURPOSE, options=schema)
        async for _ in model.stream(_user("doctor_ready"), purpose=PURPOSE, options=limited):
            pass
    except LLMError as exc:
        result.error, result.error_kind = str(exc), exc.kind
    window = await _context_window(model) if result.ok else None
    if window is not None:
        store.update(model.key, context_window=window)
    store.save(model.key)
    result.capabilities = model.capabilities
    return result


async def probe_embeddings(model: OpenAIEmbeddingModel) -> ProbeResult:
    result = ProbeResult("embedding", model.model, model.endpoint.url)
    store = model.services.capabilities
    store.reset(model.key)
    try:
        vectors, result.first_seconds = await _timed(model.embed(["graphrag-assets doctor"], purpose=PURPOSE))
        _, result.warm_seconds = await _timed(model.embed(["graphrag-assets doctor, again"], purpose=PURPOSE))
        result.vector_size = len(vectors[0])
    except LLMError as exc:
        result.error, result.error_kind = str(exc), exc.kind
    store.save(model.key)
    result.capabilities = model.capabilities
    return result
