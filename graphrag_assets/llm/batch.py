"""Many model calls at once, where one failing must not waste the others.

Indexing steps ask the model about many items concurrently (the model bounds calls in flight).
If one call fails for good, the others are still awaited to the end, so their answers reach the
response cache and the re-run the error message asks for only pays for the calls that failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from graphrag_assets.core.errors import LLMError

T = TypeVar("T")


async def gather_model_calls(calls: Iterable[Awaitable[T]], what: str) -> list[T]:
    """The results of ``calls`` in order, once every one has finished.

    Any error other than :class:`LLMError` is a bug and is raised as it is; failed model calls are
    reported together as one :class:`LLMError` naming how many of them (``what``) failed.
    """
    pending = list(calls)
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    for error in errors:
        if not isinstance(error, LLMError):
            raise error
    if errors:
        raise LLMError(
            f"{len(errors)} of {len(pending)} {what} failed (first: {errors[0]}); "
            f"re-run to retry them, the finished ones are cached."
        )
    return outcomes  # type: ignore[return-value]
