"""The packed stable sort gives numpy's stable argsort, ties and all."""

from __future__ import annotations

import numpy as np
import pytest

from graphrag_assets.core.stable_order import sorted_integers, stable_order


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16])
def test_the_order_is_the_stable_argsort(dtype) -> None:
    values = np.random.default_rng(3).integers(0, 50, 10_000).astype(dtype)  # many ties
    got = stable_order(values)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.argsort(values, kind="stable"))


def test_values_too_large_to_pack_and_negative_ones_take_the_argsort() -> None:
    for values in (np.array([1 << 60, 3, 1 << 60, 0], dtype=np.int64), np.array([2, -1, 2, -5], dtype=np.int32)):
        assert np.array_equal(stable_order(values), np.argsort(values, kind="stable"))


def test_empty_and_single() -> None:
    assert stable_order(np.zeros(0, dtype=np.int32)).size == 0
    assert stable_order(np.array([7], dtype=np.int32)).tolist() == [0]


def test_sorted_integers_is_numpys_sort_in_a_new_writable_array() -> None:
    values = np.random.default_rng(5).integers(-(1 << 62), 1 << 62, 100_000, dtype=np.int64)
    values[:3] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]
    before = values.copy()
    got = sorted_integers(values)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.sort(before))
    assert np.array_equal(values, before)  # the input is left as it was
    got[0] = 1  # writable: stable_order masks it in place
    assert sorted_integers(np.zeros(0, dtype=np.int64)).size == 0
