"""Who the model answers used in the current context belong to: a document or a corpus run.

The response cache records the current owner next to every answer it serves or stores (see
:mod:`graphrag_assets.storage.cache_owners`), so deleting a document can delete what was asked
about its text. A context variable, not a parameter, because the owner is known far from the call
(the extraction of one document's chunks, a corpus step) and asyncio tasks inherit it: the chunks
of several documents extracted concurrently each keep their own.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

DOCUMENT = "document"  # a per-document call: owner is the document key
CORPUS = "corpus"  # a corpus step's call: owner is the corpus run's id

_owner: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("cache_owner", default=None)


@contextlib.contextmanager
def cache_owner(scope: str, owner: str) -> Iterator[None]:
    """Answers used inside this block (and in tasks started from it) belong to ``owner``."""
    token = _owner.set((scope, owner))
    try:
        yield
    finally:
        _owner.reset(token)


def current_owner() -> tuple[str, str] | None:
    """(scope, owner) of the current context; None: nobody (a query, a probe)."""
    return _owner.get()
