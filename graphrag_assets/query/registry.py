"""The query methods: one descriptor each, in the one list every edge reads.

The CLI's ``--method`` choices, the Dagster query job's config, the native and OpenAI-compatible
APIs' accepted methods, the request checks (embedder, conversation history), the weak-evidence
threshold and the options a method reads from ``graphrag.yaml`` all come from :data:`METHODS`.
Adding a method takes its own module (an async ``search`` and ``context`` function, and a
settings model if it has options) and one :class:`QueryMethod` entry here.

Descriptors name their functions as ``"module:attribute"`` and load them on first use: the Dagster
definitions read the method names in every process that loads them (each index run), and the
engines (BM25, the ranking graph, numpy) cost about 0.1 s to import, which only a query should pay.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from pydantic import BaseModel, ValidationError

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import QuerySettings

# A SearchRequest in, a QueryResult out: not spelled out, since the request checks its method here.
Engine = Callable[[Any], Awaitable[Any]]


@dataclass(frozen=True)
class QueryMethod:
    """What the edges and the engine need to know about one query method.

    ``settings`` names the model of the method's options, read from ``query.methods.<name>`` in
    ``graphrag.yaml``. The four built-in methods have none here: their sections (``query.local``,
    ``query.global``, ...) are typed fields of core's ``QuerySettings``, because the server and
    ``doctor`` read them too and ``load_settings`` checks them when a project is opened; core
    cannot import this package, so a new method's model lives with the method instead.
    """

    name: str
    help: str  # one line, for the CLI's --help and the API's schema
    search: str  # "module:function": answers a SearchRequest with a QueryResult
    context: str  # "module:function": the same context without an answer and without a chat call
    weak_evidence_below: float = 0.2  # an answer whose evidence score is lower gets a warning (evidence.py)
    needs_embedder: bool = True  # False: the method never embeds the question
    uses_conversation_history: bool = False
    settings: str | None = None  # "module:Model" of the options under query.methods.<name>
    # True: uses the chat model (when one is configured) even on an index built without one (nlp)
    model_on_offline_index: bool = False

    def search_function(self) -> Engine:
        return _load(self.search)

    def context_function(self) -> Engine:
        return _load(self.context)

    def options(self, settings: QuerySettings) -> Any:
        """This method's options from ``settings.methods`` (defaults for what is not set), or
        ``None`` when it has no settings model."""
        if self.settings is None:
            return None
        model: type[BaseModel] = _load(self.settings)
        try:
            return model.model_validate(settings.methods.get(self.name, {}))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(["query", "methods", self.name, *map(str, first["loc"])])
            raise UserError(
                f"graphrag.yaml: '{where}': {first['msg'].removeprefix('Value error, ')}; fix it or remove the setting."
            ) from None


def _load(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(import_module(module), attribute)


METHODS: tuple[QueryMethod, ...] = (
    QueryMethod(
        name="local",
        help="the neighbourhood of the entities the question names: their reports, relationships, claims and sources",
        search="graphrag_assets.query.local_search:local_search",
        context="graphrag_assets.query.local_search:local_context",
        uses_conversation_history=True,
    ),
    QueryMethod(
        name="global",
        help="every community report of a level, mapped and reduced: questions about the whole corpus",
        search="graphrag_assets.query.global_search:global_search",
        context="graphrag_assets.query.global_search:global_context",
        # Corpus-wide questions ("the main themes") need not share words with any report.
        weak_evidence_below=0.0,
        needs_embedder=False,
    ),
    QueryMethod(
        name="drift",
        help="community reports first, then local searches for the follow-up questions they raise",
        search="graphrag_assets.query.drift_search:drift_search",
        context="graphrag_assets.query.drift_search:drift_context",
    ),
    QueryMethod(
        name="basic",
        help="the text units that best match the question (plain RAG)",
        search="graphrag_assets.query.basic_search:basic_search",
        context="graphrag_assets.query.basic_search:basic_context",
    ),
    QueryMethod(
        name="lazy",
        help="explores the communities best first and has the model test chunks for relevance, up to a budget "
        "(no reports needed: suits nlp and fast indexes)",
        search="graphrag_assets.query.lazy_search:lazy_search",
        context="graphrag_assets.query.lazy_search:lazy_context",
        settings="graphrag_assets.query.lazy_search:LazySearchSettings",
        model_on_offline_index=True,  # its point: a model-free index, a model per question
    ),
)


def method_names() -> tuple[str, ...]:
    """The registered methods' names, in registry order (read afresh: the registry is the module's
    :data:`METHODS`, which a test may extend)."""
    return tuple(m.name for m in METHODS)


def query_method(name: str) -> QueryMethod:
    """The method called ``name``; a user error naming the known ones when there is none."""
    for method in METHODS:
        if method.name == name:
            return method
    raise UserError(f"unknown query method {name!r}; choose one of: {', '.join(method_names())}.")


def check_method_settings(settings: QuerySettings) -> None:
    """Refuse options in ``query.methods`` that no registered method reads, and options a method
    would refuse, before a query does any work."""
    with_options = [m.name for m in METHODS if m.settings is not None]
    for name in settings.methods:
        if name not in with_options:
            known = ", ".join(with_options) or "none"
            raise UserError(
                f"graphrag.yaml: 'query.methods.{name}' names no query method with options "
                f"(methods with options: {known}); fix the name or remove the section."
            )
        query_method(name).options(settings)
