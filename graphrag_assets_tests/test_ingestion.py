import json
from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.index.changes import detect_changes
from graphrag_assets.index.documents import decode, read_file_documents
from graphrag_assets.index.input_files import discover_input_files, partition_key_for
from graphrag_assets.settings import InputSettings

ALL_TYPES = [".txt", ".md", ".csv", ".json", ".jsonl"]


def test_partition_keys_are_stable_safe_and_unique() -> None:
    assert partition_key_for("notes/plain-file_1.txt") == "notes/plain-file_1.txt"
    odd = ["a,b.txt", "a_b.txt", "x...y.md", "[draft] plan.md", "tab\there.txt", "Åsa's notes.md"]
    keys = [partition_key_for(p) for p in odd]
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert "," not in key and "..." not in key and "[" not in key and "]" not in key and "\t" not in key
    assert keys == [partition_key_for(p) for p in odd]
    assert keys[0].startswith("a_b.txt~") and keys[1] == "a_b.txt"


def test_discovery_is_recursive_sorted_and_filters_types(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    for name in ["b.txt", "a.md", "sub/c.csv", "sub/deeper/d.jsonl", "e.pdf", ".hidden.txt", "sub/x.JSON"]:
        (tmp_path / name).write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "f.txt").write_text("x")
    found = [f.path for f in discover_input_files(tmp_path, ALL_TYPES)]
    assert found == ["a.md", "b.txt", "sub/c.csv", "sub/deeper/d.jsonl", "sub/x.JSON"]


def test_invalid_utf8_is_replaced_and_counted() -> None:
    text, replaced = decode("café ".encode() + b"\xff\xfe" + " ok".encode())
    assert text == "café \ufffd\ufffd ok" and replaced == 2
    assert decode(b"\xef\xbb\xbfhello") == ("hello", 0)


def read(tmp_path: Path, name: str, data: bytes | str, **settings) -> object:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return read_file_documents(tmp_path, name, partition_key_for(name), InputSettings(**settings))


def test_text_file_gives_one_document_with_hash_and_path(tmp_path: Path) -> None:
    result = read(tmp_path, "story.md", "# Title\n\nSome text.")
    row = result.frame.row(0, named=True)
    assert result.frame.height == 1 and not result.skipped
    assert row["title"] == "story.md" and row["path"] == "story.md" and row["document_key"] == "story.md"
    assert row["text"] == "# Title\n\nSome text." and row["raw_data"] is None
    assert len(row["content_hash"]) == 64 and row["creation_date"].endswith("+00:00")


@pytest.mark.parametrize(("name", "data", "reason"), [("empty.txt", b"  \n\n", "empty"), ("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary")])
def test_empty_and_binary_files_are_skipped_with_a_warning_naming_them(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    result = read(tmp_path, name, data)
    assert result.skipped and result.frame.is_empty()
    assert len(result.warnings) == 1 and result.warnings[0].startswith(name) and reason in result.warnings[0]


def test_csv_rows_become_documents_with_configured_columns(tmp_path: Path) -> None:
    csv_text = 'key,headline,body,extra\n7,"First, with comma","Text one",a\n8,,"Text two",b\n9,Blank,,c\n'
    result = read(tmp_path, "news.csv", csv_text, text_column="body", title_column="headline", id_column="key")
    frame = result.frame
    assert frame["text"].to_list() == ["Text one", "Text two"]
    assert frame["title"].to_list() == ["First, with comma", "news.csv #1"]
    assert json.loads(frame["raw_data"][0]) == {"key": "7", "headline": "First, with comma", "body": "Text one", "extra": "a"}
    assert frame["id"].n_unique() == 2
    assert any("1 row(s) with an empty 'body'" in w for w in result.warnings)


def test_csv_without_text_column_is_skipped_with_a_hint(tmp_path: Path) -> None:
    result = read(tmp_path, "data.csv", "a,b\n1,2\n")
    assert result.skipped and "no 'text' column" in result.warnings[0] and "input.text_column" in result.warnings[0]


def test_json_and_jsonl(tmp_path: Path) -> None:
    one = read(tmp_path, "one.json", json.dumps({"title": "T", "text": "Body"}))
    assert one.frame["title"].to_list() == ["T"]
    many = read(tmp_path, "many.json", json.dumps([{"text": "a"}, {"text": "b"}, 3]))
    assert many.frame.height == 2 and any("not JSON objects" in w for w in many.warnings)
    lines = read(tmp_path, "lines.jsonl", '{"text": "x"}\nnot json\n\n{"text": "y", "meta": {"k": 1}}\n')
    assert lines.frame["text"].to_list() == ["x", "y"]
    assert json.loads(lines.frame["raw_data"][1])["meta"] == {"k": 1}
    assert any("1 line(s)" in w for w in lines.warnings)
    broken = read(tmp_path, "broken.json", "{not json")
    assert broken.skipped and "could not be parsed as JSON" in broken.warnings[0]


def test_document_ids_are_stable_and_distinct_across_files(tmp_path: Path) -> None:
    a = read(tmp_path, "a.txt", "same text")
    b = read(tmp_path, "b.txt", "same text")
    again = read(tmp_path, "a.txt", "same text")
    assert a.frame["id"][0] != b.frame["id"][0]
    assert a.frame["id"][0] == again.frame["id"][0]


def test_unreadable_file_is_skipped_not_raised(tmp_path: Path) -> None:
    (tmp_path / "dir.txt").mkdir()
    result = read_file_documents(tmp_path, "dir.txt", "dir.txt", InputSettings())
    assert result.skipped and "could not be read" in result.warnings[0]


def test_change_detection(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name)
    first = detect_changes(tmp_path, ALL_TYPES, None, set())
    assert first.new == ["a.txt", "b.txt", "c.txt"] and not first.changed
    rows = []
    for f in discover_input_files(tmp_path, ALL_TYPES):
        stat = (tmp_path / f.path).stat()
        from graphrag_assets.index.input_files import file_hash

        rows.append({"document_key": f.key, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "content_hash": file_hash(tmp_path / f.path)})
    stored = pl.DataFrame(rows)
    keys = set(stored["document_key"])
    assert detect_changes(tmp_path, ALL_TYPES, stored, keys, keys).unchanged == ["a.txt", "b.txt", "c.txt"]
    (tmp_path / "a.txt").write_text("changed content")
    (tmp_path / "b.txt").touch()
    import os

    os.utime(tmp_path / "b.txt", ns=(1, 1))  # same bytes, different mtime: hashed, still unchanged
    (tmp_path / "c.txt").unlink()
    (tmp_path / "d.txt").write_text("new")
    changes = detect_changes(tmp_path, ALL_TYPES, stored, keys, keys)
    assert (changes.new, changes.changed, changes.deleted, changes.unchanged) == (["d.txt"], ["a.txt"], ["c.txt"], ["b.txt"])
    assert set(changes.hashes) == {"a.txt", "b.txt"}


def test_windows_line_endings_are_normalized(tmp_path: Path) -> None:
    crlf = read(tmp_path, "win.txt", b"line one\r\nline two\r\n")
    lf = read(tmp_path, "unix.txt", b"line one\nline two\n")
    assert crlf.frame["text"][0] == lf.frame["text"][0] == "line one\nline two\n"
    assert crlf.frame["content_hash"][0] != lf.frame["content_hash"][0]  # the bytes still define a change
