"""The stable sorting permutation of an array of non-negative integers, made fast.

``np.argsort(values, kind="stable")`` of 32-bit integers is a merge sort. Each value packed above
its position in one int64 sorts as plain integers (no order to carry), and the positions
read back in that order are the same permutation (ties keep their order, as the positions break
them). The walk graph's 37.7 M directed edges at 100,000 documents, ordered by target: 2.6–2.8 s
by the argsort, 1.1–1.6 s packed (4.8 s against 1.6 s on random targets, which have no runs).

The packed values are sorted by polars (:func:`sorted_integers`), three times as fast as numpy's
sort of plain integers on this machine: 2 M random int64 in 37-41 ms against 115-128 ms, 20 M in
0.50 s against 1.63 s (numpy 2.4, polars 2.1, 2 cores).
"""

from __future__ import annotations

import numpy as np
import polars as pl


def stable_order(values: np.ndarray) -> np.ndarray:
    """What ``np.argsort(values, kind="stable")`` returns (int64), for non-negative integers; values
    too large to pack with their positions (or negative ones) take that argsort."""
    count = len(values)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    position_bits = max((count - 1).bit_length(), 1)
    if int(values.min()) < 0 or int(values.max()).bit_length() + position_bits > 63:
        return np.argsort(values, kind="stable")
    packed = values.astype(np.int64) << position_bits
    packed |= np.arange(count, dtype=np.int64)
    packed = sorted_integers(packed)
    np.bitwise_and(packed, (1 << position_bits) - 1, out=packed)
    return packed


def sorted_integers(values: np.ndarray) -> np.ndarray:
    """``np.sort(values)`` of an int64 array, by polars (see the module docstring); a new array."""
    return pl.Series(values, dtype=pl.Int64).sort().to_numpy(writable=True)
