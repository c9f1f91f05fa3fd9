"""Float32 vectors without numpy (core/float32.py): the bytes, the conversions and the checks."""

from __future__ import annotations

import math
import struct
from array import array

import numpy as np
import pytest

from graphrag_assets.core.float32 import (
    as_float32,
    float32_buffer,
    from_le_bytes,
    is_finite,
    le_bytes_are_finite,
    to_le_bytes,
    weighted_unit_mean,
    zeros,
)


def test_bytes_are_little_endian_float32_both_ways():
    data = struct.pack("<3f", 0.5, -2.0, 3.25)
    vector = from_le_bytes(data)
    assert memoryview(vector).format == "f" and vector.tolist() == [0.5, -2.0, 3.25]
    assert to_le_bytes(vector) == to_le_bytes([0.5, -2.0, 3.25]) == to_le_bytes(np.float32([0.5, -2.0, 3.25])) == data


def test_a_decoded_vector_is_a_view_of_its_bytes_and_gives_them_back():
    """No copy from the response to the cache and to DuckDB (on this little-endian machine)."""
    data = struct.pack("<2f", 1.0, 2.0)
    vector = from_le_bytes(data)
    assert to_le_bytes(vector) is data and to_le_bytes(vector[1:]) == struct.pack("<f", 2.0)
    assert np.asarray(vector).tolist() == [1.0, 2.0]


def test_a_length_that_is_not_whole_numbers_is_refused():
    with pytest.raises(ValueError):
        from_le_bytes(b"\x00" * 5)


@pytest.mark.parametrize(
    "values",
    [
        [1.0, -0.5, 0.25],
        np.array([1.0, -0.5, 0.25]),
        np.float32([1.0, -0.5, 0.25]),
        np.float32([1.0, 9.0, -0.5, 9.0, 0.25])[::2],
    ],
    ids=["list", "float64-array", "float32-array", "strided-float32-array"],
)
def test_any_flat_sequence_of_numbers_becomes_float32(values):
    vector = as_float32(values)
    assert vector.typecode == "f" and vector.tolist() == [1.0, -0.5, 0.25]


def test_a_float32_array_is_kept_and_a_nested_list_refused():
    vector, numbers = array("f", [1.0]), np.float32([1.0, 2.0])
    assert as_float32(vector) is vector and float32_buffer(vector) is vector and float32_buffer(numbers) is numbers
    assert float32_buffer(numbers[::2]).tolist() == [1.0] and float32_buffer([1, 2]).typecode == "f"
    with pytest.raises(TypeError):
        as_float32([[1.0, 2.0]])


def test_zeros():
    assert zeros(3).tolist() == [0.0, 0.0, 0.0] and zeros(0).tolist() == []


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_one_number_that_is_not_finite_makes_the_vector_not_finite(bad):
    assert not is_finite(array("f", [0.1, bad, 0.3]))


def test_the_largest_float32_numbers_are_finite():
    assert is_finite(array("f", [3.4e38] * 4096)) and is_finite(array("f", [-3.4e38, 3.4e38]))


def test_the_weighted_mean_is_numpys_scaled_to_unit_length():
    vectors = [array("f", [1.0, 0.0, 2.0]), array("f", [0.0, 3.0, -1.0]), array("f", [0.5, 0.5, 0.5])]
    weights = [3, 1, 2]
    expected = np.average(np.stack(vectors).astype(np.float64), axis=0, weights=weights)
    expected /= np.linalg.norm(expected)
    mean = weighted_unit_mean(vectors, weights)
    assert mean.typecode == "f"
    np.testing.assert_allclose(mean, expected, rtol=1e-6)
    assert weighted_unit_mean([array("f", [0.0, 0.0])], [1]).tolist() == [0.0, 0.0]  # all zeros: left as it is


@pytest.mark.parametrize(
    "bits",
    [0x7FC00000, 0xFFC00001, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF],
    ids=["nan", "negative-nan", "infinity", "minus-infinity", "signalling-nan", "all-ones"],
)
def test_bytes_with_one_number_that_is_not_finite_are_not_finite(bits):
    data = struct.pack("<f", 0.25) + struct.pack("<I", bits) + struct.pack("<f", -3.0)
    assert not le_bytes_are_finite(data) and not is_finite(from_le_bytes(data))


def test_the_byte_check_agrees_with_the_numbers_on_every_exponent_and_sign():
    """Every exponent and sign, in the first, a middle and the last position of a vector."""
    numbers = [struct.pack("<I", sign << 31 | exponent << 23 | 0x400001) for sign in (0, 1) for exponent in range(256)]
    for number in numbers:
        for position in (0, 3, 7):
            data = b"".join(struct.pack("<f", 1.5) if i != position else number for i in range(8))
            assert (
                le_bytes_are_finite(data)
                == is_finite(from_le_bytes(data))
                == all(map(math.isfinite, np.frombuffer(data, "<f4")))
            )
