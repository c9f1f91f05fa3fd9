"""``graphrag-assets doctor``: can the configured endpoints do what indexing and querying need?

It probes the chat and embedding endpoints with a few tiny calls (:mod:`graphrag_assets.llm.probe`),
reports what each accepts and how fast it answers, the configured prices, and what the next
``index`` would cost (the dry run). When something cannot work (a refused key, an unknown model, an
unreachable server) :attr:`DoctorReport.problem` is one sentence saying what and how to fix it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings, default_price_table
from graphrag_assets.llm.chat import OpenAIChatModel
from graphrag_assets.llm.embeddings import OpenAIEmbeddingModel
from graphrag_assets.llm.factory import build_chat_model, build_embedding_model
from graphrag_assets.llm.probe import ProbeResult, probe_chat, probe_embeddings
from graphrag_assets.llm.reranker import Reranker, RerankError
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.project.dry_run import estimate_next_run

SLOW_FIRST_SECONDS = 2.0
PROMPT_OVERHEAD_TOKENS = 1500  # extraction instructions and examples around a chunk


@dataclass
class DoctorReport:
    method: str
    chat: ProbeResult | None = None  # None: no chat endpoint configured
    embeddings: ProbeResult | None = None  # None: the local embedder
    prices: dict[str, dict[str, float] | None] = field(default_factory=dict)
    dry_run: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    reranker: dict[str, Any] | None = None  # None: no llm.reranker

    @property
    def ok(self) -> bool:
        return self.problem is None

    def as_dict(self) -> dict[str, Any]:
        def endpoint(result: ProbeResult | None) -> dict[str, Any] | None:
            if result is None:
                return None
            return {
                "model": result.model,
                "url": result.url,
                "ok": result.ok,
                "error": result.error,
                "first_seconds": _round(result.first_seconds),
                "warm_seconds": _round(result.warm_seconds),
                "vector_size": result.vector_size,
                "capabilities": result.capabilities.as_dict(),
            }

        return {
            "ok": self.ok,
            "problem": self.problem,
            "method": self.method,
            "chat": endpoint(self.chat),
            "embeddings": endpoint(self.embeddings),
            "prices": self.prices,
            "dry_run": self.dry_run,
            "notes": self.notes,
            "reranker": self.reranker,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def run_doctor(settings: Settings) -> DoctorReport:
    """Probe the configured endpoints and estimate the next run; never raises for a failed probe."""
    report = DoctorReport(settings.resolved_method)
    llm = settings.llm.model_copy(update={"cache": False})  # probes must reach the server
    meter = UsageMeter()
    chat = build_chat_model(llm, settings.database_path, meter) if llm.endpoint_configured else None
    embedder = None
    if not llm.use_local_embedder:
        built = build_embedding_model(llm, settings.embeddings, settings.database_path, meter)
        embedder = built if isinstance(built, OpenAIEmbeddingModel) else None
    report.chat, report.embeddings = asyncio.run(_probe(chat, embedder))
    for model in (chat, embedder):
        if model is not None:
            model.close()
    if settings.llm.reranker is not None:
        report.reranker = _probe_reranker(Reranker(settings.llm.reranker))
    report.prices = {m: _price(settings, m) for m in (settings.llm.chat_model, settings.llm.embedding_model)}
    report.dry_run = _dry_run(settings)
    report.notes = _notes(settings, report)
    failed = next((r for r in (report.chat, report.embeddings) if r is not None and not r.ok), None)
    report.problem = _problem(failed) if failed is not None else None
    return report


def _probe_reranker(reranker: Reranker) -> dict[str, Any]:
    """One small rerank: whether it works and how long it takes (a failure is not fatal: queries
    then run without reranking)."""
    found: dict[str, Any] = {"api": reranker.settings.api, "url": reranker.url}
    try:
        return {**found, "ok": True, "seconds": _round(asyncio.run(reranker.probe())), "error": None}
    except RerankError as exc:
        return {**found, "ok": False, "seconds": None, "error": str(exc)}


async def _probe(
    chat: OpenAIChatModel | None, embedder: OpenAIEmbeddingModel | None
) -> tuple[ProbeResult | None, ProbeResult | None]:
    return (await probe_chat(chat) if chat else None), (await probe_embeddings(embedder) if embedder else None)


def _price(settings: Settings, model: str) -> dict[str, float] | None:
    price = settings.llm.prices.get(model)
    return (
        None
        if price is None
        else {"input_per_million": price.input_per_million, "output_per_million": price.output_per_million}
    )


def _dry_run(settings: Settings) -> dict[str, Any]:
    try:
        estimate = estimate_next_run(settings)
    except UserError as exc:
        return {"error": str(exc)}
    stage = estimate.usage.values()
    return {
        "documents": len(estimate.new) + len(estimate.changed),
        "text_units": estimate.text_units,
        "calls": sum(u["calls"] for u in stage),
        "prompt_tokens": sum(u["prompt_tokens"] for u in stage),
        "completion_tokens": sum(u["completion_tokens"] for u in stage),
        "cost_usd": round(sum(u["cost_usd"] for u in stage), 6),
    }


def _problem(result: ProbeResult) -> str:
    """One sentence: what cannot work, and what to change."""
    chat = result.kind == "chat"
    key_setting = "OPENAI_API_KEY or llm.api_key" if chat else "llm.embedding_api_key (or llm.api_key)"
    model_setting = "llm.chat_model" if chat else "llm.embedding_model"
    url_setting = "llm.base_url" if chat else "llm.embedding_base_url (or llm.base_url)"
    if result.error_kind == "auth":
        return (
            f"the {result.kind} endpoint {result.url} refused the API key (HTTP 401); set {key_setting} to a valid key."
        )
    if result.error_kind == "not_found":
        return (
            f"the {result.kind} endpoint {result.url} has no model '{result.model}' (HTTP 404); check {model_setting} "
            f"(on Azure, the deployment name) and {url_setting}."
        )
    return str(result.error)


def _largest_prompt_budget(settings: Settings) -> tuple[int, str]:
    q = settings.query
    budgets = {
        "chunking.size (+ the extraction prompt)": settings.chunking.size + PROMPT_OVERHEAD_TOKENS,
        "reports.max_input_length": settings.reports.max_input_length,
        "query.local.max_context_tokens": q.local.max_context_tokens,
        "query.global.max_context_tokens": q.global_.max_context_tokens,
        "query.basic.max_context_tokens": q.basic.max_context_tokens,
    }
    name = max(budgets, key=budgets.__getitem__)
    return budgets[name], name


def _notes(settings: Settings, report: DoctorReport) -> list[str]:
    notes: list[str] = []
    chat = report.chat
    if chat is not None and chat.ok:
        notes.extend(chat.notes)
        caps = chat.capabilities
        first, warm = chat.first_seconds or 0.0, chat.warm_seconds or 0.0
        if first > max(SLOW_FIRST_SECONDS, 5 * warm):
            notes.append(
                f"the first answer took {first:.1f} s and the next {warm:.2f} s: the server loads the model on first "
                f"use; llm.request_timeout ({settings.llm.request_timeout:g} s) must stay above that."
            )
        if first > settings.llm.request_timeout / 2:
            notes.append("answers take more than half of llm.request_timeout; raise it for this server.")
        budget, name = _largest_prompt_budget(settings)
        if caps.context_window is not None and caps.context_window < budget:
            notes.append(
                f"the context window ({caps.context_window:,} tokens) is smaller than {name} ({budget:,}); longer "
                "prompts are shortened to fit, so lower that setting or raise the server's context length."
            )
        if caps.think_blocks:
            notes.append(
                "answers start with a <think> block: it is removed before parsing, but its tokens are paid for."
            )
        if not caps.temperature:
            notes.append("the model accepts only its default temperature, so answers may vary from run to run.")
        if caps.json_object in ("ignored", "rejected") and caps.json_schema in ("ignored", "rejected"):
            notes.append(
                "the server does not enforce JSON answers: reports and query steps rely on the prompt and on JSON repair."
            )
    embeddings = report.embeddings
    if embeddings is not None and embeddings.ok and embeddings.capabilities.dimensions in ("ignored", "rejected"):
        notes.append(
            f"llm.embedding_dimensions is not supported by this server; vectors have {embeddings.vector_size} dimensions."
        )
    return notes


def _support(value: str, unknown: str = "not tried") -> str:
    return {"honoured": "honoured", "ignored": "accepted but not followed", "rejected": "refused", "unknown": unknown}[
        value
    ]


def render_doctor(report: DoctorReport, settings: Settings) -> str:
    """The report as aligned text for the terminal."""
    lines: list[str] = []

    def row(label: str, value: str) -> None:
        lines.append(f"  {label:<18} {value}")

    def price(model: str) -> str:
        p = report.prices.get(model)
        if p is None:
            return f"not set (llm.prices.{model})"
        figures = f"${p['input_per_million']:g} input / ${p['output_per_million']:g} output per million tokens"
        as_of, defaults = default_price_table()
        if model in defaults and settings.llm.prices.get(model) == defaults[model]:
            figures += f" (OpenAI's list price of {as_of}; llm.prices.{model} overrides it)"
        return figures

    def timing(result: ProbeResult) -> str:
        if not result.ok:
            return "no"
        return f"yes: first in {result.first_seconds or 0:.2f} s, then {result.warm_seconds or 0:.2f} s"

    chat = report.chat
    if chat is None:
        lines.append("chat        none configured (the nlp method indexes without a model)")
    else:
        caps = chat.capabilities
        lines.append(f"chat        {chat.model} at {chat.url}")
        row("answers", timing(chat))
        if chat.ok:
            row("token limit", caps.token_limit_parameter)
            row("temperature", "accepted" if caps.temperature else "refused (the model's default is used)")
            row("JSON object", _support(caps.json_object))
            row("JSON schema", _support(caps.json_schema))
            row(
                "usage in streams",
                _support(caps.stream_usage)
                .replace("honoured", "reported")
                .replace("accepted but not followed", "missing"),
            )
            row("<think> blocks", "yes (removed before parsing)" if caps.think_blocks else "no")
            row("context window", f"{caps.context_window:,} tokens" if caps.context_window else "not reported")
        row("price", price(chat.model))
    emb = report.embeddings
    if emb is None:
        lines.append("embeddings  local embedder (no endpoint)")
    else:
        caps = emb.capabilities
        lines.append(f"embeddings  {emb.model} at {emb.url}")
        row("answers", timing(emb))
        if emb.ok:
            row("vectors", f"{emb.vector_size} dimensions" + (" (base64)" if caps.base64_embeddings else ""))
            row(
                "dimensions",
                _support(caps.dimensions, "not asked for") if settings.llm.embedding_dimensions else "not asked for",
            )
        row("price", price(emb.model))
    if report.reranker is not None:
        rr = report.reranker
        lines.append(f"reranker    {rr['api']} API at {rr['url']}")
        row("answers", f"yes, in {rr['seconds']:.2f} s" if rr["ok"] else f"no: {rr['error']} (queries run without it)")
    dry = report.dry_run
    if "error" in dry:
        lines.append(f"next index  unknown: {dry['error']}")
    else:
        cost = f", ~${dry['cost_usd']:.4f}" if dry["cost_usd"] else ""
        lines.append(
            f"next index  {dry['documents']} document file(s), {dry['text_units']} text unit(s): {dry['calls']} model call(s), "
            f"~{dry['prompt_tokens']:,} prompt + ~{dry['completion_tokens']:,} completion tokens{cost} "
            "(per-document stage, as 'index --dry-run' counts it)"
        )
    if report.notes:
        lines.append("notes")
        lines.extend(f"  - {note}" for note in report.notes)
    return "\n".join(lines)
