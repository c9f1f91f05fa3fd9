"""The tokenizer (core/tokens.py) encodes as tiktoken's cl100k_base does without tiktoken's Python
copy of the rank table, and still pickles (tiktoken pickles a registered encoding by name)."""

from __future__ import annotations

import pickle

from graphrag_assets.core.tokens import get_tokenizer

TEXT = "Søren Holm keeps the Kestrel Point light. <|endoftext|> Ünïcödé, tabs\tand 12345 digits."
# cl100k_base of TEXT, from a complete tiktoken encoding (special tokens as plain text)
TOKENS = [50, 6282, 1466, 16071, 76, 13912, 279, 735, 478, 3833, 5236, 3177, 13, 83739, 8862, 728, 428, 91, 29,
          31612, 77, 38672, 66, 3029, 67, 978, 11, 23204, 53577, 220, 4513, 1774, 19016, 13]


def test_the_tokenizer_encodes_and_decodes_as_cl100k_base() -> None:
    tokenizer = get_tokenizer("cl100k_base")
    assert tokenizer.encode_ordinary(TEXT) == TOKENS
    assert tokenizer.decode(TOKENS) == TEXT
    assert tokenizer.decode_bytes(TOKENS[:2]) == "Sø".encode()


def test_the_tokenizer_still_pickles() -> None:
    copy = pickle.loads(pickle.dumps(get_tokenizer("cl100k_base")))
    assert copy.encode_ordinary(TEXT) == TOKENS


def test_released_encodings_are_gone_until_asked_for_again() -> None:
    import tiktoken.registry

    from graphrag_assets.core.tokens import OFFLINE_FALLBACK, release_tokenizers

    first = get_tokenizer("cl100k_base")
    assert tiktoken.registry.ENCODINGS.get(OFFLINE_FALLBACK) is not None
    release_tokenizers()
    assert OFFLINE_FALLBACK not in tiktoken.registry.ENCODINGS and get_tokenizer.cache_info().currsize == 0
    again = get_tokenizer("cl100k_base")
    assert again is not first and again.encode_ordinary(TEXT) == TOKENS
    assert pickle.loads(pickle.dumps(again)).encode_ordinary(TEXT) == TOKENS
