"""The next item made in a thread while this one is consumed: order, errors, one item ahead."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from graphrag_assets.core.made_ahead import made_ahead


def test_items_come_in_order_and_all_of_them() -> None:
    assert list(made_ahead(range(7))) == list(range(7))
    assert list(made_ahead([])) == []


def test_the_next_item_is_made_in_another_thread_while_one_is_consumed() -> None:
    made: list[int] = []
    next_made = threading.Event()

    def items() -> Iterator[int]:
        for i in range(3):
            made.append(i)
            if i == 1:
                next_made.set()
            yield i

    ahead = made_ahead(items())
    assert next(ahead) == 0
    assert next_made.wait(5), "item 1 was not made while item 0 was held"
    assert made == [0, 1]  # one ahead, not more
    assert list(ahead) == [1, 2]


def test_an_error_while_making_an_item_is_raised_in_its_place() -> None:
    def items() -> Iterator[int]:
        yield 1
        raise ValueError("batch 2 is broken")

    ahead = made_ahead(items())
    assert next(ahead) == 1
    with pytest.raises(ValueError, match="batch 2 is broken"):
        next(ahead)


def test_a_consumer_that_stops_early_leaves_no_thread_behind() -> None:
    before = {t.name for t in threading.enumerate()}
    ahead = made_ahead(iter(range(100)))
    assert next(ahead) == 0
    ahead.close()
    assert {t.name for t in threading.enumerate()} - before == set()
