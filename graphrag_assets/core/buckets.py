"""Stable hash buckets: how a large corpus maps its documents onto a fixed number of partitions.

Past ``partitions.bucket_threshold`` documents, Dagster sees ``partitions.buckets`` partitions
named ``bucket-007-of-256`` instead of one per document (its event log, its UI and its planning
all grow with the partition count; see docs/SCALING.md). A document's bucket is a hash of its key,
so it never moves while the bucket count stays the same, and the count is part of the name, so a
key always says which scheme it belongs to. Document keys are file paths with an extension and
never look like a bucket key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_BUCKET_KEY = re.compile(r"^bucket-(\d+)-of-(\d+)$")


def bucket_key(index: int, buckets: int) -> str:
    width = len(str(buckets - 1))
    return f"bucket-{index:0{width}d}-of-{buckets}"


def all_bucket_keys(buckets: int) -> list[str]:
    """Every bucket key of a scheme with ``buckets`` buckets, in partition order."""
    return [bucket_key(index, buckets) for index in range(buckets)]


def bucket_of(document_key: str, buckets: int) -> str:
    """The bucket key of a document (first 64 bits of its key's MD5, modulo the bucket count)."""
    digest = hashlib.md5(document_key.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()
    return bucket_key(int.from_bytes(digest[:8], "big") % buckets, buckets)


def parse_bucket_key(key: str) -> tuple[int, int] | None:
    """``(index, buckets)`` of a bucket key, None for anything else (a document key)."""
    match = _BUCKET_KEY.match(key)
    if match is None:
        return None
    index, buckets = int(match.group(1)), int(match.group(2))
    return (index, buckets) if 0 <= index < buckets else None


def is_bucket_key(key: str) -> bool:
    return parse_bucket_key(key) is not None


def documents_in_buckets(document_keys: Iterable[str], bucket_keys: Iterable[str]) -> list[str]:
    """The documents (of ``document_keys``) that fall into any of ``bucket_keys``, sorted."""
    wanted = set(bucket_keys)
    counts = {parsed[1] for key in wanted if (parsed := parse_bucket_key(key))}
    if not counts:
        return []
    if len(counts) > 1:
        raise ValueError(f"bucket keys of different schemes cannot be mixed: {sorted(wanted)[:3]}")
    buckets = counts.pop()
    return sorted(key for key in document_keys if bucket_of(key, buckets) in wanted)
