"""The tokenizer (core/tokens.py) encodes as tiktoken's cl100k_base does without tiktoken's Python
copy of the rank table, and still pickles (tiktoken pickles a registered encoding by name)."""

from __future__ import annotations

import pickle

from graphrag_assets.core.tokens import get_tokenizer

TEXT = "Søren Holm keeps the Kestrel Point light. <|endoftext|> Ünïcödé, tabs\tand 12345 digits."
# cl100k_base of TEXT, from a complete tiktoken encoding (special tokens as plain text)
TOKENS = [
    50,
    6282,
    1466,
    16071,
    76,
    13912,
    279,
    735,
    478,
    3833,
    5236,
    3177,
    13,
    83739,
    8862,
    728,
    428,
    91,
    29,
    31612,
    77,
    38672,
    66,
    3029,
    67,
    978,
    11,
    23204,
    53577,
    220,
    4513,
    1774,
    19016,
    13,
]


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


def test_an_index_lets_the_tokenizer_go_when_it_publishes(graphrag_server, tmp_path) -> None:
    """The publish step releases the tokenizer before the run's closing checkpoint, and nothing after
    it loads the tokenizer again (a reload would take 35 MB at the index's highest point)."""
    import tiktoken.registry

    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.core.tokens import OFFLINE_FALLBACK
    from graphrag_assets.pipeline.indexing import index_project
    from graphrag_assets_tests.conftest import make_llm_project

    root = make_llm_project(tmp_path / "project", graphrag_server.base_url)
    get_tokenizer("cl100k_base")  # held before, as by an earlier run in this process
    report = index_project(load_settings(root, environ={}))
    assert report.success and report.graph["entities"] > 0
    assert get_tokenizer.cache_info().currsize == 0 and OFFLINE_FALLBACK not in tiktoken.registry.ENCODINGS
