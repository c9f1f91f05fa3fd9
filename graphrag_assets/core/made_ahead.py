"""Making the next item of a sequence while the consumer works on this one.

The nlp graph's relationships are made in Python batch by batch (20 s at 100,000 documents, 16 of
them ids hashed per row, before ``index/edge_ids.py``; 10.5 s after, on a machine where the same
code took 43 s) and written by DuckDB, which lets go of the interpreter while it writes (36 s
there). One after the other, that is their sum; with the next batch made in a thread while
DuckDB writes this one, it is about the longer of the two on a machine with a second core.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
_END = object()


def made_ahead(items: Iterable[T]) -> Iterator[T]:
    """``items`` in order, each made in one background thread while the one before is consumed.

    At most two items are alive at once (the consumer's and the next); an exception raised while
    making an item is raised here, in its place. A consumer that stops early waits for the item
    being made to be finished, then the thread ends.
    """
    iterator = iter(items)
    with ThreadPoolExecutor(1, thread_name_prefix="made-ahead") as thread:
        pending = thread.submit(next, iterator, _END)
        while True:
            item = pending.result()
            if item is _END:
                return
            pending = thread.submit(next, iterator, _END)
            yield item  # type: ignore[misc]
            del item
