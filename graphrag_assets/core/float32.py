"""Embedding vectors without numpy: float32 views of their bytes, or the standard library's ``array('f')``.

An index with a model only carries vectors: from the server's base64 (little-endian float32) to
the response cache (the same bytes) and to DuckDB (``FLOAT[n]``, through a polars Array column
made from those bytes). A ``memoryview`` cast to float32 over the decoded bytes, or an
``array('f')``, holds them in the same 4 bytes a number as a numpy float32 array, while importing
numpy costs 12 MB resident in a process whose budget is 300 MB (issue 14).
So numpy is imported only where vectors are computed on (entity resolution, the offline embedder,
searches); there ``np.asarray`` reads either through the buffer protocol, without a copy per
number (a view gives a read-only array).
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from typing import Any, TypeAlias

TYPECODE = "f"  # C float: IEEE 754 single precision on every platform CPython supports
Vector: TypeAlias = "array | memoryview"  # of float32: what this module makes


def from_le_bytes(data: bytes | bytearray | memoryview) -> Vector:
    """The vector stored as little-endian float32 ``data`` (ValueError unless a multiple of 4 bytes):
    a read-only float32 view of the bytes themselves, not a copy, on a little-endian machine, so a
    vector decoded from a response is stored in the cache and in DuckDB from the same bytes."""
    if len(data) % 4:
        raise ValueError(f"{len(data)} bytes are not a whole number of float32 values")
    if sys.byteorder == "little":
        return memoryview(bytes(data)).cast(TYPECODE)  # bytes(data) is data itself when it is bytes
    vector = array(TYPECODE)
    vector.frombytes(data)
    vector.byteswap()
    return vector


def to_le_bytes(vector: Any) -> bytes:
    """``vector`` (see :func:`float32_buffer`) as little-endian float32 bytes: the bytes a
    :func:`from_le_bytes` view was made of, else a copy."""
    view = memoryview(float32_buffer(vector))
    if sys.byteorder == "big":
        return from_le_bytes(view.cast("B")).tobytes()  # the swap is its own inverse
    if isinstance(view.obj, bytes) and view.nbytes == len(view.obj):
        return view.obj
    return view.cast("B").tobytes()


def float32_buffer(values: Any) -> Any:
    """``values`` itself when it is a flat, contiguous float32 array of either kind (no copy), else
    :func:`as_float32` of it."""
    try:
        view = memoryview(values)
    except TypeError:
        return as_float32(values)
    return values if view.format == TYPECODE and view.ndim == 1 and view.c_contiguous else as_float32(values)


def as_float32(values: Any) -> array:
    """``values`` as ``array('f')`` (itself when it is one): a flat sequence of numbers, converted
    number by number (TypeError when one is not a number)."""
    if isinstance(values, array) and values.typecode == TYPECODE:
        return values
    return array(TYPECODE, values)


def zeros(dimension: int) -> array:
    return array(TYPECODE, bytes(4 * dimension))


def is_finite(vector: Sequence[float]) -> bool:
    """Whether no number is NaN or infinite. One C-level sum: float32 magnitudes cannot overflow
    a float64 total, so the total is finite exactly when every number is."""
    return math.isfinite(sum(vector))


# A float32 is NaN or infinite when its 8 exponent bits are all set: in little-endian bytes, the
# low 7 bits of the 4th byte and the top bit of the 3rd.
_TOP_EXPONENT_BITS = bytes(int(b & 0x7F == 0x7F) for b in range(256))
_LAST_EXPONENT_BIT = bytes(int(b >= 0x80) for b in range(256))


def le_bytes_are_finite(data: bytes) -> bool:
    """:func:`is_finite` of the little-endian float32 ``data`` without unpacking a number: the
    bytes holding the exponent are mapped to 0/1 flags and the two flag strings ANDed as integers,
    which keeps a cache read of 20,000 vectors as fast as numpy made it."""
    top = int.from_bytes(data[3::4].translate(_TOP_EXPONENT_BITS), "little")
    return not top & int.from_bytes(data[2::4].translate(_LAST_EXPONENT_BIT), "little")


def weighted_unit_mean(vectors: Sequence[Sequence[float]], weights: Sequence[int]) -> array:
    """The weighted mean of ``vectors`` scaled to length 1 (left as it is when it is all zeros),
    accumulated in float64."""
    total = [0.0] * len(vectors[0])
    for vector, weight in zip(vectors, weights):
        for i, value in enumerate(vector):
            total[i] += weight * value
    norm = math.sqrt(math.fsum(x * x for x in total)) or 1.0
    return array(TYPECODE, [x / norm for x in total])
