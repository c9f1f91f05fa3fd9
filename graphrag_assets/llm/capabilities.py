"""What one endpoint and model accept, learned once and kept in the project's DuckDB file.

OpenAI-compatible servers differ in ways a request cannot guess in advance: reasoning models refuse
``max_tokens`` and any ``temperature``, some servers refuse ``response_format`` or only its
``json_schema`` form, some never report usage in streams, some embeddings endpoints refuse (or
ignore) ``dimensions`` or ``encoding_format: base64``. The client starts from the common case, and when a server answers with one
of these documented refusals it adapts, asks again, and records the fact here, so the next call,
the next step and the next run start from what is known instead of paying for the refusal again.
``graphrag-assets doctor`` probes the same facts on purpose and overwrites them.

Values are kept per ``(endpoint URL, model, chat|embedding)`` for the life of the process (several model objects
of one run share them) and in the ``llm_capabilities`` table, written when something changes. The
table holds no credential. Failing to read or write it only costs a re-detection.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from graphrag_assets.storage.capabilities import read_capabilities, write_capabilities
from graphrag_assets.storage.table_names import CAPABILITIES as CAPABILITIES_TABLE

log = logging.getLogger(__name__)

DB_WAIT_SECONDS = 2.0  # never make a model call wait long on a locked file for this

UNKNOWN = "unknown"
Support = str  # unknown | honoured | ignored | rejected


@dataclass(frozen=True)
class Capabilities:
    """What a server does with the parts of a request that vary between servers.

    ``json_object`` / ``json_schema`` / ``dimensions`` / ``encoding_format``: *honoured* (accepted and followed),
    *ignored* (accepted, not followed), *rejected* (refused with an error), or *unknown*.
    """

    token_limit_parameter: str = "max_tokens"  # or max_completion_tokens (OpenAI reasoning models)
    temperature: bool = True  # False: only the server's default temperature is accepted
    json_object: Support = UNKNOWN
    json_schema: Support = UNKNOWN
    stream_usage: Support = UNKNOWN  # usage in the last chunk of a stream (stream_options.include_usage)
    context_window: int | None = None  # tokens, when the server reported it
    think_blocks: bool = False  # answers start with a <think>...</think> block
    dimensions: Support = UNKNOWN  # embeddings: the ``dimensions`` parameter
    base64_embeddings: bool = False  # embeddings arrived base64-encoded
    encoding_format: Support = UNKNOWN  # embeddings: ``encoding_format: base64`` (else floats)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capabilities:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


Key = tuple[str, str, str]  # (endpoint url, model, chat | embedding)

_MEMORY: dict[Key, Capabilities] = {}  # learned in this process, shared by every store
_LOCK = threading.Lock()


class CapabilityStore:
    """Capabilities by ``(endpoint url, model, kind)``: this process's, else the project's table."""

    def __init__(self, db_path: str | Path | None) -> None:
        self.db_path = Path(db_path) if db_path is not None else None
        self._stored: dict[Key, Capabilities] | None = None

    def get(self, key: Key) -> Capabilities:
        with _LOCK:
            known = _MEMORY.get(key)
        stored = self._load().get(key)
        if known is None:
            with _LOCK:
                return _MEMORY.setdefault(key, stored or Capabilities())
        if stored != known and known != Capabilities():
            self._persist(key, known)  # learned in this process, for another project: keep it here too
        return known

    def update(self, key: Key, **changes: Any) -> dict[str, Any]:
        """Apply ``changes``; returns those that changed something (and persists them)."""
        current = self.get(key)  # also writes what this process knows to this project, if it lacks it
        changed = {name: value for name, value in changes.items() if getattr(current, name) != value}
        if not changed:
            return {}
        updated = replace(current, **changed)
        with _LOCK:
            _MEMORY[key] = updated
        self._persist(key, updated)
        return changed

    def reset(self, key: Key) -> None:
        """Forget what is known about ``key`` (``doctor`` re-detects from scratch)."""
        with _LOCK:
            _MEMORY[key] = Capabilities()

    def save(self, key: Key) -> None:
        """Write the current capabilities of ``key`` (after a reset and fresh detection), creating
        the project's database if needed: an explicit check is worth keeping."""
        self._persist(key, self.get(key), create=True)

    def _load(self) -> dict[Key, Capabilities]:
        if self._stored is not None:
            return self._stored
        self._stored = {}
        if self.db_path is None or not self.db_path.exists():
            return self._stored
        try:
            for endpoint, model, kind, text in read_capabilities(self.db_path, DB_WAIT_SECONDS):
                self._stored[(endpoint, model, kind)] = Capabilities.from_dict(json.loads(text))
        except Exception as exc:  # a locked or unreadable file: detect again instead
            log.info(
                "could not read %s from %s (%s); capabilities will be detected again.",
                CAPABILITIES_TABLE,
                self.db_path,
                exc,
            )
        return self._stored

    def _persist(self, key: Key, capabilities: Capabilities, create: bool = False) -> None:
        """Write one row. A model call never creates the project's database (indexing does):
        until it exists, what was learned stays in this process and is written once it does."""
        if self.db_path is None or (not create and not self.db_path.exists()):
            return
        text = json.dumps(capabilities.as_dict(), sort_keys=True)
        try:
            write_capabilities(self.db_path, key, text, DB_WAIT_SECONDS)
        except Exception as exc:  # kept in memory for this process; the next run detects again
            log.info("could not write %s to %s (%s).", CAPABILITIES_TABLE, self.db_path, exc)
        if self._stored is not None:
            self._stored[key] = capabilities


def stored_capabilities(db_path: str | Path) -> dict[Key, Capabilities]:
    """Everything the project's table holds (for status displays and tests)."""
    return dict(CapabilityStore(db_path)._load())
