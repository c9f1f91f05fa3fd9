import json
from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.settings import InputSettings
from graphrag_assets.index.changes import detect_changes
from graphrag_assets.index.documents import decode, read_file_documents
from graphrag_assets.index.input_files import discover_input_files, partition_key_for

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
    text, replaced = decode("café ".encode() + b"\xff\xfe" + b" ok")
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


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [("empty.txt", b"  \n\n", "empty"), ("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary")],
)
def test_empty_and_binary_files_are_skipped_with_a_warning_naming_them(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    result = read(tmp_path, name, data)
    assert result.skipped and result.frame.is_empty()
    assert len(result.warnings) == 1 and result.warnings[0].startswith(name) and reason in result.warnings[0]


def test_csv_rows_become_documents_with_configured_columns(tmp_path: Path) -> None:
    csv_text = 'key,headline,body,extra\n7,"First, with comma","Text one",a\n8,,"Text two",b\n9,Blank,,c\n'
    result = read(tmp_path, "news.csv", csv_text, text_column="body", title_column="headline", id_column="key")
    frame = result.frame
    assert frame["text"].to_list() == ["Text one", "Text two"]
    assert frame["title"].to_list() == ["First, with comma", "news.csv #1"]
    assert json.loads(frame["raw_data"][0]) == {
        "key": "7",
        "headline": "First, with comma",
        "body": "Text one",
        "extra": "a",
    }
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

        rows.append(
            {
                "document_key": f.key,
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "content_hash": file_hash(tmp_path / f.path),
            }
        )
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
    assert (changes.new, changes.changed, changes.deleted, changes.unchanged) == (
        ["d.txt"],
        ["a.txt"],
        ["c.txt"],
        ["b.txt"],
    )
    assert set(changes.hashes) == {"a.txt", "b.txt"}


def test_windows_line_endings_are_normalized(tmp_path: Path) -> None:
    crlf = read(tmp_path, "win.txt", b"line one\r\nline two\r\n")
    lf = read(tmp_path, "unix.txt", b"line one\nline two\n")
    assert crlf.frame["text"][0] == lf.frame["text"][0] == "line one\nline two\n"
    assert crlf.frame["content_hash"][0] != lf.frame["content_hash"][0]  # the bytes still define a change


def test_csv_row_with_more_fields_than_the_header_keeps_the_file(tmp_path: Path) -> None:
    result = read(tmp_path, "wide.csv", "id,text\n1,first\n2,second,surplus,more\n3,third\n", id_column="id")
    assert not result.skipped and result.frame["text"].to_list() == ["first", "second", "third"]
    assert json.loads(result.frame["raw_data"][1]) == {
        "id": "2",
        "text": "second",
        "_extra_fields": ["surplus", "more"],
    }
    assert "wide.csv: 1 row(s) have more fields than the header" in result.warnings[0]


def test_csv_cell_larger_than_the_csv_modules_default_limit(tmp_path: Path) -> None:
    long_text = "word " * 40_000  # 200,000 characters; the csv module's default limit is 131,072
    result = read(tmp_path, "long.csv", f'title,text\nBig,"{long_text}"\nSmall,short\n')
    assert not result.skipped and result.warnings == []
    assert result.frame["text"].to_list() == [long_text.strip(), "short"]


def test_jsonl_keeps_records_with_unicode_line_separators(tmp_path: Path) -> None:
    records = [{"text": "before\u2028after\u2029next\x85end"}, {"text": "plain"}]
    data = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\r\n"
    result = read(tmp_path, "seps.jsonl", data)
    assert result.warnings == [] and result.frame["text"].to_list() == ["before\u2028after\u2029next\x85end", "plain"]


def test_deeply_nested_json_is_a_parse_problem_not_a_crash(tmp_path: Path) -> None:
    result = read(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    assert result.skipped and "could not be parsed as JSON" in result.warnings[0]
    lines = read(tmp_path, "deep.jsonl", '{"text": "kept"}\n' + "[" * 100_000 + "\n")
    assert lines.frame["text"].to_list() == ["kept"] and "skipped 1 line(s)" in lines.warnings[0]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "UTF_16BE", "utf-32", "utf-32-le"])
def test_utf16_and_utf32_text_is_read_not_taken_for_binary(tmp_path: Path, encoding: str) -> None:
    text = "Søren's log\nTide: high — 東京\n"
    result = read(tmp_path, "wide.txt", text.encode(encoding), encoding=encoding)
    assert not result.skipped and result.warnings == []
    assert result.frame["text"].to_list() == [text]


def test_a_utf16_byte_order_mark_wins_over_the_configured_encoding(tmp_path: Path) -> None:
    rows = "text,title\nNotepad wrote this,Ünïcode\n"
    result = read(tmp_path, "notepad.csv", rows.encode("utf-16"))  # BOM + little-endian; settings say utf-8
    assert result.warnings == [] and result.frame["title"].to_list() == ["Ünïcode"]


def test_binary_is_still_recognised_under_a_utf16_setting(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(200) + bytes(range(256))
    result = read(tmp_path, "image.txt", png, encoding="utf-16")
    assert result.skipped and "binary" in result.warnings[0]
    blank = read(tmp_path, "blank.txt", " \n".encode("utf-16"), encoding="utf-16")
    assert blank.skipped and "empty" in blank.warnings[0]


def test_unknown_encoding_is_a_configuration_error(tmp_path: Path) -> None:
    from graphrag_assets.core.errors import ConfigError
    from graphrag_assets.core.settings import load_settings

    for name in ("xyz", "base64"):  # base64 exists as a codec, but not as a text encoding
        with pytest.raises(ValueError, match=f"unknown text encoding '{name}'; use a Python codec name"):
            InputSettings(encoding=name)
    assert InputSettings(encoding="Latin-1").encoding == "Latin-1"
    (tmp_path / "graphrag.yaml").write_text("input:\n  encoding: xyz\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={})
    assert str(caught.value).startswith("graphrag.yaml: 'input.encoding': unknown text encoding 'xyz'")
    assert "\n" not in str(caught.value)


def test_one_file_failing_unexpectedly_is_a_skipped_partition(tmp_path: Path) -> None:
    from graphrag_assets.core.settings import Settings
    from graphrag_assets.pipeline.assets.ingest import ingest_partition

    settings = Settings(root=tmp_path)
    settings.input_dir.mkdir(parents=True)
    (settings.input_dir / "good.txt").write_text("Some text.")
    (settings.input_dir / "gone.txt").write_text("Deleted after discovery.")
    files = {f.key: f for f in discover_input_files(settings.input_dir, ALL_TYPES)}
    (settings.input_dir / "gone.txt").unlink()
    results = {key: ingest_partition(settings, key, files[key], "fp") for key in ("gone.txt", "good.txt")}
    frame, row, warnings = results["gone.txt"]
    assert frame.is_empty() and (row["status"], row["documents"], row["path"]) == ("skipped", 0, "gone.txt")
    assert warnings == [row["message"]] and row["message"].startswith(
        "gone.txt: skipped, reading it failed unexpectedly (FileNotFoundError"
    )
    frame, row, warnings = results["good.txt"]
    assert frame["text"].to_list() == ["Some text."] and row["status"] == "ingested" and warnings == []


def test_links_are_followed_once_and_dangling_ones_are_named(tmp_path: Path) -> None:
    import os

    from graphrag_assets.index.input_files import scan_input_files

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "note.txt").write_text("a note", encoding="utf-8")
    os.symlink(tmp_path, tmp_path / "a" / "back-up")  # a loop
    os.symlink(tmp_path / "gone.txt", tmp_path / "dangling.txt")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "far.md").write_text("far away", encoding="utf-8")
    os.symlink(elsewhere, tmp_path / "linked")
    scan = scan_input_files(tmp_path, [".txt", ".md"])
    assert [f.path for f in scan.files] == ["a/note.txt", "linked/far.md"]
    assert scan.passed_over == [
        "dangling.txt: skipped, a link to a file that does not exist",
        "a/back-up: a link to a folder already read, not followed again",
    ]
    changes = detect_changes(tmp_path, [".txt", ".md"], None, set())
    assert changes.passed_over == scan.passed_over
