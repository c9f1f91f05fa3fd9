"""Relationship ids of a coded graph, computed with numpy from one digest per node.

:func:`graphrag_assets.core.ids.relationship_id` xors a digest of each end; here each node's two
digests (as a source, as a target) are made once, and a batch of edges gathers, xors and formats
them as uuid text in array operations. At 100,000 documents the nlp graph has 15 M relationships:
hashed pair by pair in Python their ids took 16-20 s of CPU beside the DuckDB write they fed.
Equal to ``relationship_id`` (``test_edge_ids.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from graphrag_assets.core.ids import relationship_end_digest

# the two hex digits of every byte, as one uint16 each (read back as two bytes in memory order)
_HEX_DIGITS = np.frombuffer("".join(f"{byte:02x}" for byte in range(256)).encode("ascii"), dtype=np.uint16)
_DASH = 32  # the byte after the 32 hex digits holds "-"
# uuid text (8-4-4-4-12) as positions in the 32 digits, the dash at _DASH
_UUID_POSITIONS = np.array(
    [*range(0, 8), _DASH, *range(8, 12), _DASH, *range(12, 16), _DASH, *range(16, 20), _DASH, *range(20, 32)]
)


@dataclass(frozen=True)
class NodeDigests:
    """Each node's 16-byte digest as a relationship's source and as its target (rows: node codes)."""

    source: np.ndarray  # (nodes, 2) uint64
    target: np.ndarray

    @classmethod
    def of(cls, titles: Sequence[str]) -> NodeDigests:
        return cls(_digests(titles, "source"), _digests(titles, "target"))

    def ids(self, source: np.ndarray, target: np.ndarray) -> pl.Series:
        """The ids of the edges from the node codes ``source`` to ``target``, as uuid text."""
        xored = self.source[source] ^ self.target[target]
        return uuid_text(xored)


def _digests(titles: Sequence[str], end: str) -> np.ndarray:
    raw = b"".join(relationship_end_digest(end, title).to_bytes(16, "big") for title in titles)
    return np.frombuffer(raw, dtype=np.uint64).reshape(-1, 2)


def uuid_text(values: np.ndarray) -> pl.Series:
    """Rows of 16 bytes (as (n, 2) uint64) in uuid form: lower-case hex, dashes 8-4-4-4-12."""
    rows = len(values)
    digits = np.empty((rows, 17), dtype=np.uint16)
    digits[:, :16] = _HEX_DIGITS[values.view(np.uint8)]
    as_bytes = digits.view(np.uint8)  # (rows, 34): the 32 digits, then the dash's byte and one spare
    as_bytes[:, _DASH] = ord("-")
    text = np.ascontiguousarray(as_bytes[:, _UUID_POSITIONS])
    import pyarrow as pa  # as nlp_graph's relationships: imported when a coded graph writes them

    offsets = np.arange(0, 36 * (rows + 1), 36, dtype=np.int64)
    array = pa.LargeStringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(text))
    return pl.Series("id", pl.from_arrow(array), dtype=pl.String)
