"""The one source of truth for configuration.

``load_settings(root)`` reads the optional ``graphrag.yaml`` in a project root, substitutes
``${VAR}`` / ``${VAR:-default}`` from the environment, validates it and fills defaults. Both the
Dagster definitions and the CLI call it, so they can never disagree. With no file at all the
defaults work; with no API key and no base URL the pipeline runs offline (``method: nlp``).

Every problem is reported as a :class:`~graphrag_assets.core.errors.ConfigError` naming the file and
the key, in one sentence.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graphrag_assets.core.errors import ConfigError
from graphrag_assets.core.tokens import known_encodings

SETTINGS_FILE = "graphrag.yaml"
DEFAULT_ENTITY_TYPES = ["organization", "person", "geo", "event"]

Method = Literal["standard", "fast", "nlp"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Price(_Section):
    """US dollars per million tokens, used to estimate the cost of a run."""

    input_per_million: float = Field(0.0, ge=0)
    output_per_million: float = Field(0.0, ge=0)


def http_url(value: str | None) -> str | None:
    """A server's URL as settings keep it (no trailing slash); blank is None; anything but http(s) is refused."""
    if value in (None, ""):
        return None
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError("must start with http:// or https://")
    return value.rstrip("/")


class RerankerSettings(_Section):
    """A cross-encoder behind a ``/rerank`` API (llm/reranker.py has each API's request and reply)."""

    api: Literal["cohere", "jina", "vllm", "infinity", "tei"] = "cohere"
    base_url: str  # the server, without the /rerank path (e.g. http://127.0.0.1:7997)
    api_key: str | None = Field(None, repr=False)  # default: $RERANK_API_KEY
    model: str | None = None  # sent to the APIs that take one (all but tei)
    top_n: int = Field(10, ge=1)  # candidates kept after reranking
    candidates: int = Field(30, ge=1)  # best search hits sent to the reranker
    timeout_seconds: float = Field(10.0, gt=0)

    _url = field_validator("base_url")(lambda cls, value: http_url(value))


PRICE_TABLE = Path(__file__).parent / "data" / "model_prices.yaml"


@functools.cache
def default_price_table() -> tuple[str, dict[str, Price]]:
    """The date and prices of :data:`PRICE_TABLE`: OpenAI's list prices for its own models."""
    data = yaml.safe_load(PRICE_TABLE.read_text(encoding="utf-8"))
    return str(data["as_of"]), {model: Price(**price) for model, price in data["prices"].items()}


def default_prices() -> dict[str, Price]:
    return dict(default_price_table()[1])


class LLMSettings(_Section):
    """The OpenAI-compatible endpoint(s). Chat and embeddings may use different servers."""

    api_key: str | None = Field(None, repr=False)  # default: $OPENAI_API_KEY
    base_url: str | None = None  # default: $OPENAI_BASE_URL, else OpenAI's own
    api_version: str | None = None  # set for Azure OpenAI (then base_url is the resource endpoint)
    chat_model: str = "gpt-4o-mini"
    embedding_model: str = "text-embedding-3-small"
    embedding_base_url: str | None = None  # default: base_url
    embedding_api_key: str | None = Field(None, repr=False)  # default: api_key
    embedding_dimensions: int | None = Field(None, ge=1)  # sent as `dimensions`; None: the model's own size
    embeddings: Literal["auto", "openai", "local"] = "auto"  # auto: local when no endpoint is configured
    concurrency: int = Field(25, ge=1, le=1000)
    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    max_retries: int = Field(6, ge=0, le=20)
    retry_base_delay: float = Field(1.0, ge=0)
    retry_max_delay: float = Field(60.0, ge=0)
    request_timeout: float = Field(180.0, gt=0)
    temperature: float = Field(0.0, ge=0, le=2)
    json_mode: bool = True  # ask for response_format=json_object where JSON is expected
    cache: bool = True
    # keyed by model name; the default table (core/data/model_prices.yaml) under the ones set here
    prices: dict[str, Price] = Field(default_factory=default_prices)
    reranker: RerankerSettings | None = None  # reorders basic and local search's passages when set

    _url = field_validator("base_url", "embedding_base_url")(lambda cls, value: http_url(value))

    @field_validator("prices")
    @classmethod
    def _over_default_prices(cls, value: dict[str, Price]) -> dict[str, Price]:
        return {**default_price_table()[1], **value}

    @field_validator("api_key", "embedding_api_key", "api_version")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None

    @property
    def endpoint_configured(self) -> bool:
        """True when a key or a base URL points at a model server."""
        return bool(self.api_key or self.base_url)

    @property
    def use_local_embedder(self) -> bool:
        if self.embeddings == "local":
            return True
        if self.embeddings == "openai":
            return False
        return not (self.endpoint_configured or self.embedding_base_url or self.embedding_api_key)


class InputSettings(_Section):
    dir: str = "data/input"
    file_types: list[str] = Field(default_factory=lambda: [".txt", ".md", ".csv", ".json", ".jsonl"])
    encoding: str = "utf-8"
    text_column: str = "text"  # csv / json / jsonl: column holding the document text
    title_column: str | None = "title"  # used when present; else file name plus row number
    id_column: str | None = None  # used as the row key when present; else the row number
    metadata_columns: list[str] = Field(default_factory=list)  # kept in raw_data (all when empty)

    @field_validator("file_types")
    @classmethod
    def _dot(cls, value: list[str]) -> list[str]:
        allowed = {".txt", ".md", ".csv", ".json", ".jsonl"}
        normalized = [v if v.startswith(".") else f".{v}" for v in (x.lower() for x in value)]
        unknown = sorted(set(normalized) - allowed)
        if unknown:
            raise ValueError(f"unsupported file type(s) {unknown}; supported: {sorted(allowed)}")
        return normalized

    @field_validator("encoding")
    @classmethod
    def _known_text_encoding(cls, value: str) -> str:
        """Reject unknown names here, once, rather than as a LookupError on every document.

        Encoding a letter also rejects codecs that exist but are not text encodings (base64, zlib);
        an empty string would not do, as Python skips the codec lookup for it.
        """
        try:
            "a".encode(value)
        except LookupError:
            raise ValueError(
                f"unknown text encoding {value!r}; use a Python codec name such as utf-8 or latin-1"
            ) from None
        return value


class ChunkingSettings(_Section):
    size: int = Field(1200, ge=16, le=100_000)
    overlap: int = Field(100, ge=0)
    encoding: str = "cl100k_base"

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        known = known_encodings()
        if value not in known:
            raise ValueError(f"unknown tokenizer encoding {value!r}; use one of: {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingSettings:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        return self


class ClaimSettings(_Section):
    enabled: bool = False
    description: str = "Any claims or facts that could be relevant to information discovery."
    max_gleanings: int = Field(1, ge=0, le=10)
    prompt: str | None = None  # path to a custom prompt file (relative to the project root)


class ExtractionSettings(_Section):
    entity_types: list[str] = Field(default_factory=lambda: list(DEFAULT_ENTITY_TYPES), min_length=1)
    max_gleanings: int = Field(1, ge=0, le=10)
    prompt: str | None = None
    claims: ClaimSettings = Field(default_factory=ClaimSettings)


class SummarizeSettings(_Section):
    max_length: int = Field(500, ge=10)  # words, told to the model
    max_input_tokens: int = Field(4000, ge=200)
    prompt: str | None = None


class ResolutionSettings(_Section):
    """Entity resolution: merge entities that are one real thing (see index/entity_resolution.py)."""

    enabled: bool = False
    verdicts: Literal["auto", "model", "rules"] = "auto"  # auto: the model in the standard method, rules otherwise
    max_group_size: int = Field(12, ge=2, le=50)  # entities per model call
    prompt: str | None = None
    neighbours: int = Field(8, ge=0, le=100)  # nearest embedding neighbours per entity (0: names only)
    min_similarity: float = Field(0.3, ge=-1, le=1)  # cosine similarity a neighbour needs


class PruneSettings(_Section):
    """Graph pruning for the nlp method (semantics of Microsoft's prune_graph)."""

    min_node_freq: int = Field(2, ge=1)
    max_node_freq_std: float | None = None
    min_node_degree: int = Field(1, ge=0)
    max_node_degree_std: float | None = None
    min_edge_weight_pct: float = Field(40.0, ge=0, le=100)
    # keeps at most max_mean_degree × entities / 2 relationships, the heaviest; edges of equal weight
    # stay or go together, those of the heaviest weight always stay (null: no bound)
    max_mean_degree: float | None = Field(250.0, gt=0)
    remove_ego_nodes: bool = True
    lcc_only: bool = False


class NlpSettings(_Section):
    max_word_length: int = Field(15, ge=2)
    normalize_edge_weights: bool = True
    prune: PruneSettings = Field(default_factory=PruneSettings)


class CommunitySettings(_Section):
    max_cluster_size: int = Field(10, ge=2)
    use_lcc: bool = True
    seed: int = 0xDEADBEEF
    backend: Literal["auto", "graspologic", "igraph", "leidenalg"] = "auto"
    resolution: float = Field(1.0, gt=0)
    # exact: every update clusters from scratch (the index equals a rebuild); stable: start from
    # the previous communities and let only the affected region move (see stable_communities).
    update: Literal["exact", "stable"] = "exact"
    drift_threshold: float = Field(0.02, ge=0)  # stable: re-cluster when modularity drifts further
    recluster_every: int = Field(0, ge=0)  # stable: re-cluster after this many warm starts (0: never)
    # stable: measure drift against a fresh clustering every this many warm starts; in between,
    # against the last measured one (see stable_communities)
    drift_every: int = Field(10, ge=1)


class ReportSettings(_Section):
    max_length: int = Field(2000, ge=50)  # words, told to the model
    max_input_length: int = Field(8000, ge=200)  # tokens of context per community
    prompt: str | None = None
    text_prompt: str | None = None  # fast method: reports from text units


class EmbeddingSettings(_Section):
    batch_size: int = Field(16, ge=1, le=2048)
    batch_max_tokens: int = Field(8191, ge=16)
    # offline embedder (llm.embeddings resolves to local): wordllama, the static embedding model
    # shipped in the wordllama wheel (256 dimensions); hashing, feature hashing (local_dimension);
    # combined, both vectors side by side (256 + local_dimension)
    local_model: Literal["wordllama", "hashing", "combined"] = "wordllama"
    local_dimension: int = Field(512, ge=16, le=8192)  # hashing only


class LocalSearchSettings(_Section):
    top_k_entities: int = Field(10, ge=1)
    top_k_relationships: int = Field(10, ge=1)
    max_context_tokens: int = Field(12000, ge=500)
    # 0.7 (Microsoft: 0.5): the share that lets the graph ranking's sources reach as many documents as
    # hybrid basic search (LiHua-World hit@10 94.2% at 0.5, 95.1% at 0.7; docs/querying.md); entities
    # and relationships keep 15%
    text_unit_prop: float = Field(0.7, ge=0, le=1)
    community_prop: float = Field(0.15, ge=0, le=1)
    conversation_history_max_turns: int = Field(5, ge=0)
    # graph: personalized PageRank from the question's entities and passages (query/graph_ranking.py);
    # msgraphrag: Microsoft GraphRAG's order (mapped entities, then their relationships and text units).
    ranking: Literal["graph", "msgraphrag"] = "graph"
    ppr_damping: float = Field(0.5, gt=0, lt=1)  # probability of following an edge rather than resetting
    passage_weight: float = Field(0.05, ge=0)  # reset mass of the best-matching passage, relative to all seed entities

    @model_validator(mode="after")
    def _props(self) -> LocalSearchSettings:
        if self.text_unit_prop + self.community_prop > 1:
            raise ValueError("text_unit_prop + community_prop must not exceed 1")
        return self


class GlobalSearchSettings(_Section):
    community_level: int = Field(2, ge=0)
    dynamic_selection: bool = False
    dynamic_threshold: int = Field(1, ge=0, le=5)
    max_context_tokens: int = Field(12000, ge=500)  # per map batch
    data_max_tokens: int = Field(12000, ge=500)  # reduce input
    map_max_length: int = Field(1000, ge=10)
    reduce_max_length: int = Field(2000, ge=10)
    shuffle_seed: int = 86


class DriftSearchSettings(_Section):
    primer_folds: int = Field(5, ge=1)
    k_followups: int = Field(20, ge=1)
    n_depth: int = Field(3, ge=0)
    max_followups_per_depth: int = Field(20, ge=1)


class BasicSearchSettings(_Section):
    k: int = Field(10, ge=1)
    mode: Literal["hybrid", "vector"] = "hybrid"  # hybrid: vector and full-text hits fused by reciprocal rank
    max_context_tokens: int = Field(12000, ge=500)


class QuerySettings(_Section):
    response_type: str = "Multiple Paragraphs"
    max_question_tokens: int = Field(2000, ge=16)  # a longer question is refused, not sent into every call
    # Indexes whose text units hold at most this many tokens are searched in memory, without LanceDB.
    in_memory_search_max_tokens: int = Field(300_000, ge=0)
    prompts: dict[str, str] = Field(default_factory=dict)  # prompt name (e.g. local_search) -> your file
    local: LocalSearchSettings = Field(default_factory=LocalSearchSettings)
    global_: GlobalSearchSettings = Field(default_factory=GlobalSearchSettings, alias="global")
    drift: DriftSearchSettings = Field(default_factory=DriftSearchSettings)
    basic: BasicSearchSettings = Field(default_factory=BasicSearchSettings)
    # Options of query methods that bring their own settings model (query/registry.py), by method
    # name: core cannot import the query package, so each is checked by its method when a query runs.
    methods: dict[str, dict[str, Any]] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ObjectStoreSettings(_Section):
    """How to reach an s3:// ``storage.shared_url``; each key left empty falls back to the standard
    AWS_* environment variable (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)."""

    endpoint_url: str | None = None  # an S3-compatible server (MinIO, moto, Ceph...); None: AWS itself
    region: str | None = None
    access_key_id: str | None = Field(None, repr=False)
    secret_access_key: str | None = Field(None, repr=False)
    session_token: str | None = Field(None, repr=False)

    _url = field_validator("endpoint_url")(lambda cls, value: http_url(value))


class StorageSettings(_Section):
    database: str = "data/graphrag.duckdb"
    lancedb: str = "data/lancedb"
    # auto: LanceDB tables are built once the text units exceed query.in_memory_search_max_tokens
    # (smaller indexes are searched in memory) and kept from then on; always: built on every run.
    lancedb_tables: Literal["auto", "always"] = "auto"
    # A folder or s3://bucket/prefix every machine can reach: each index run publishes its build
    # there and continues from the newest one; readers without a local index read that build.
    shared_url: str | None = None
    object_store: ObjectStoreSettings = Field(default_factory=ObjectStoreSettings)

    @field_validator("shared_url")
    @classmethod
    def _shared_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        scheme = re.match(r"^([a-z][a-z0-9+.-]*)://", value)
        if scheme and scheme.group(1) not in ("s3", "file"):
            raise ValueError("must be a folder path, file://… or s3://bucket/prefix")
        if scheme and scheme.group(1) == "s3" and not re.match(r"^s3://[^/\s]+", value):
            raise ValueError("must name a bucket: s3://bucket/prefix")
        return value.rstrip("/")


class IncrementalSettings(_Section):
    sensor_interval_seconds: int = Field(60, ge=5)
    schedule_cron: str | None = None  # e.g. "0 * * * *"; the schedule is only defined when set


class ServeSettings(_Section):
    """``graphrag-assets serve``: the API key and the limits of the HTTP server (see serve/)."""

    api_key: str | None = Field(None, repr=False)  # also --api-key / $GRAPHRAG_SERVE_API_KEY
    max_request_bytes: int = Field(1_000_000, ge=1_024)  # a larger request body is refused (413)
    max_question_chars: int = Field(8_000, ge=16)  # also the limit of a system prompt
    reload_interval_seconds: float = Field(2.0, gt=0)  # how often a newer published index is looked for
    # A build with more relationships keeps them in files of its own on disk while it is served
    # (serve/snapshot.py), not in memory: 15 M of them took 12 GB.
    in_memory_relationships_max: int = Field(100_000, ge=0)
    # A big build (searched in storage) has its vectors searched in memory while served, up to this
    # size (float32: 150 MB at 100,000 documents); an exact search in storage took 50-90 ms a question.
    in_memory_vectors_mb: int = Field(1_024, ge=0)
    # ... and its stored words (BM25) up to this size (148 MB at 100,000 documents): by SQL a
    # question's full-text search took ~20-50 ms, in memory ~1-5 ms.
    in_memory_words_mb: int = Field(1_024, ge=0)
    # Host names the server answers for besides loopback names and its own address (also --allowed-host);
    # "*" answers any. Without an API key every request's Host is checked (DNS rebinding); with one, only
    # when this list is set.
    allowed_hosts: list[str] = Field(default_factory=list)
    request_timeout_seconds: float = Field(10.0, gt=0)  # to send a request's headers, and then its body
    max_connections: int = Field(256, ge=1)  # open connections and requests at once; past it, 503
    key_failures: int = Field(10, ge=1)  # wrong API keys in a row from one address before it must wait (429)
    key_failure_window_seconds: float = Field(60.0, gt=0)  # how long those failures count

    @field_validator("api_key")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None


class PartitionSettings(_Section):
    """How documents map onto Dagster partitions: one each, or hash buckets for a large corpus (docs/SCALING.md)."""

    bucket_threshold: int = Field(10_000, ge=1)  # from this many document files on, partitions are buckets
    buckets: int = Field(256, ge=2, le=10_000)


class WorkerSettings(_Section):
    """Where the per-document steps run: in the indexing process (1), or on N workers (docs/SCALING.md).

    With ``count`` > 1 the document steps run as shards on worker processes (``engine``:
    ``multiprocess`` on this machine, ``dask`` on a running dask.distributed scheduler, ``k8s``
    in Kubernetes pods through dagster-k8s) that exchange Parquet files with the one process that
    writes the index.
    """

    count: int = Field(1, ge=1, le=256)  # also `index --workers N`
    engine: Literal["multiprocess", "dask", "k8s"] = "multiprocess"
    dask_scheduler: str | None = None  # tcp://host:port of a running scheduler (engine dask)
    # engine k8s: the config of dagster-k8s's k8s_job_executor (job_image, job_namespace, env_secrets,
    # step_k8s_config, ...); max_concurrent is `count`
    k8s: dict[str, Any] = Field(default_factory=dict)

    @field_validator("dask_scheduler")
    @classmethod
    def _scheduler_address(cls, value: str | None) -> str | None:
        if value and not re.fullmatch(r"(tcp|tls)://[^\s/:]+:\d+", value):
            raise ValueError("must be a scheduler address such as tcp://127.0.0.1:8786")
        return value or None

    @model_validator(mode="after")
    def _dask_needs_scheduler(self) -> WorkerSettings:
        if self.engine == "dask" and self.count > 1 and not self.dask_scheduler:
            raise ValueError("engine dask needs workers.dask_scheduler, the address of a running dask scheduler")
        return self


class IndexSettings(_Section):
    """How ``index`` runs the corpus job (docs/SCALING.md).

    ``corpus_processes``: each corpus step (graph, communities, reports, embeddings, manifest) in a
    process of its own, so a step's peak memory is its own and not what the steps before it left
    in the process (allocators keep freed memory); ``auto`` does so for a big corpus only, where
    the few seconds of starting the processes are small beside the steps.
    """

    corpus_processes: Literal["auto", "always", "never"] = "auto"


class Settings(_Section):
    """Validated project settings. Paths are relative to ``root``."""

    root: Path = Path(".")
    method: Literal["auto", "standard", "fast", "nlp"] = "auto"
    llm: LLMSettings = Field(default_factory=LLMSettings)
    input: InputSettings = Field(default_factory=InputSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    summarize: SummarizeSettings = Field(default_factory=SummarizeSettings)
    resolution: ResolutionSettings = Field(default_factory=ResolutionSettings)
    nlp: NlpSettings = Field(default_factory=NlpSettings)
    communities: CommunitySettings = Field(default_factory=CommunitySettings)
    reports: ReportSettings = Field(default_factory=ReportSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    query: QuerySettings = Field(default_factory=QuerySettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    incremental: IncrementalSettings = Field(default_factory=IncrementalSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)
    partitions: PartitionSettings = Field(default_factory=PartitionSettings)
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)

    @property
    def resolved_method(self) -> Method:
        """``auto`` means standard when a model endpoint is configured, nlp (offline) otherwise."""
        if self.method != "auto":
            return self.method
        return "standard" if self.llm.endpoint_configured else "nlp"

    def path(self, relative: str | Path) -> Path:
        """A settings path resolved against the project root."""
        p = Path(relative).expanduser()
        return p if p.is_absolute() else (self.root / p)

    @property
    def input_dir(self) -> Path:
        return self.path(self.input.dir)

    @property
    def database_path(self) -> Path:
        return self.path(self.storage.database)

    @property
    def lancedb_path(self) -> Path:
        return self.path(self.storage.lancedb)

    def lancedb_tables_for(self, text_unit_tokens: int) -> bool:
        """Whether an index whose text units hold ``text_unit_tokens`` tokens keeps LanceDB tables:
        ``always``, or more than queries search in memory (see ``project/lancedb_tables.py``)."""
        return self.storage.lancedb_tables == "always" or text_unit_tokens > self.query.in_memory_search_max_tokens


_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def substitute_env(value: Any, environ: dict[str, str], where: str = "") -> Any:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string of a parsed YAML tree."""
    if isinstance(value, dict):
        return {k: substitute_env(v, environ, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, environ, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(
            f"{SETTINGS_FILE}: '{where}' refers to ${{{name}}}, which is not set; "
            f"export {name} or write ${{{name}:-}} to allow it to be empty."
        )

    return _ENV_PATTERN.sub(replace, value)


def _describe_validation_error(exc: ValidationError, source: str, raw: dict[str, Any]) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = ".".join("global" if part == "global_" else str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    if first["type"] == "extra_forbidden":
        parent_model: type[BaseModel] = Settings
        for part in first["loc"][:-1]:
            field = parent_model.model_fields.get(str(part)) or parent_model.model_fields.get(f"{part}_")
            annotation = getattr(field, "annotation", None)
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                parent_model = annotation
        known = [f.alias or n for n, f in parent_model.model_fields.items()]
        close = difflib.get_close_matches(str(first["loc"][-1]), known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; known keys here: {', '.join(known)}."
        return f"{source}: unknown setting '{loc}'{hint}{more}"
    value = first.get("input")
    secret = any("api_key" in str(part) for part in first["loc"])
    shown = "" if isinstance(value, (dict, list)) or secret else f" (got {value!r})"
    message = first["msg"].removeprefix("Value error, ")
    return f"{source}: '{loc}': {message}{shown}{more}."


def load_settings(
    root: str | Path | None = None,
    environ: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Load and validate settings for a project root (default: ``$GRAPHRAG_ROOT`` or the cwd).

    ``overrides`` (nested dicts, e.g. from CLI flags) are applied on top of the file.
    """
    env = dict(os.environ if environ is None else environ)
    root_path = Path(root or env.get("GRAPHRAG_ROOT") or ".").expanduser().resolve()
    if not root_path.is_dir():
        raise ConfigError(f"project root {root_path} does not exist; pass --root with an existing folder.")
    file = root_path / SETTINGS_FILE
    raw: dict[str, Any] = {}
    if file.exists():
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file} could not be read ({exc}); check its permissions and encoding.") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "invalid YAML"
            raise ConfigError(
                f"{SETTINGS_FILE} is not valid YAML{where}: {problem}; fix the file or delete it to use defaults."
            ) from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(
                f"{SETTINGS_FILE} must hold a mapping of settings at the top level, not a {type(loaded).__name__}."
            )
        raw = substitute_env(loaded, env)
    if overrides:
        raw = _deep_merge(raw, overrides)
    if "root" in raw:
        raise ConfigError(
            f"{SETTINGS_FILE}: 'root' cannot be set in the file; pass --root or set GRAPHRAG_ROOT instead."
        )
    llm = dict(raw.get("llm") or {})
    if not isinstance(raw.get("llm", {}), (dict, type(None))):
        raise ConfigError(f"{SETTINGS_FILE}: 'llm' must be a mapping of settings.")
    if llm.get("api_key") in (None, "") and env.get("OPENAI_API_KEY"):
        llm["api_key"] = env["OPENAI_API_KEY"]
    if llm.get("base_url") in (None, "") and env.get("OPENAI_BASE_URL"):
        llm["base_url"] = env["OPENAI_BASE_URL"]
    reranker = llm.get("reranker")
    if isinstance(reranker, dict) and reranker.get("api_key") in (None, "") and env.get("RERANK_API_KEY"):
        llm["reranker"] = {**reranker, "api_key": env["RERANK_API_KEY"]}
    raw = {**raw, "llm": llm, "root": root_path}
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        source = SETTINGS_FILE if file.exists() else "settings"
        raise ConfigError(_describe_validation_error(exc, source, raw)) from None


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
