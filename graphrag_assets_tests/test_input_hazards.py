"""Inputs that must never stop or corrupt an index: names that are not UTF-8, pipes and devices,
binary content under a text name, duplicate row ids, an unclosed CSV quote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphrag_assets.core.settings import InputSettings
from graphrag_assets.index.changes import detect_changes
from graphrag_assets.index.documents import read_file_documents
from graphrag_assets.index.input_files import file_hash, partition_key_for, scan_input_files
from graphrag_assets_testkit.projects import make_project, query_db

TEXT_TYPES = [".txt", ".md", ".csv"]
NOT_UTF8 = b"caf\xe9.txt"  # "café" in Latin-1: the \xe9 byte alone is not UTF-8
NOT_UTF8_WARNING = (
    "caf\\xe9.txt: skipped, the file name is not valid UTF-8 (shown here with its bad bytes as \\x..); "
    "rename it to a UTF-8 name to index it"
)


def write_bytes_name(folder: Path, name: bytes, data: bytes) -> None:
    """A file whose name is raw bytes (str paths cannot spell a name that is not UTF-8)."""
    with open(os.path.join(os.fsencode(folder), name), "wb") as handle:
        handle.write(data)


def read(folder: Path, name: str, data: bytes | str, **settings) -> object:
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return read_file_documents(folder, name, partition_key_for(name), InputSettings(**settings))


def test_a_name_that_is_not_utf8_is_passed_over_with_its_bytes_shown(tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("plain", encoding="utf-8")
    write_bytes_name(tmp_path, NOT_UTF8, b"text")
    folder = os.path.join(os.fsencode(tmp_path), b"r\xe9sum\xe9s")
    os.mkdir(folder)
    write_bytes_name(Path(os.fsdecode(folder)), b"inside.txt", b"x")
    scan = scan_input_files(tmp_path, TEXT_TYPES)
    assert [f.path for f in scan.files] == ["plain.txt"]
    assert scan.passed_over == [
        "r\\xe9sum\\xe9s: skipped, the folder name is not valid UTF-8 (shown here with its bad bytes as \\x..); "
        "rename it to a UTF-8 name to index it",
        NOT_UTF8_WARNING,
    ]
    for entry in scan.passed_over:
        entry.encode("utf-8")  # printable and storable: no lone surrogates left


@pytest.mark.timeout(20)
def test_pipes_and_devices_are_passed_over_not_read(tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("plain", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.txt")
    os.symlink("/dev/null", tmp_path / "device.txt")
    scan = scan_input_files(tmp_path, TEXT_TYPES)
    assert [f.path for f in scan.files] == ["plain.txt"]
    assert scan.passed_over == [
        "device.txt: skipped, it is a device, not a regular file",
        "pipe.txt: skipped, it is a named pipe, not a regular file",
    ]
    assert detect_changes(tmp_path, TEXT_TYPES, None, set()).new == ["plain.txt"]
    # A file swapped for a pipe after the scan: reading and hashing refuse at once instead of waiting.
    result = read_file_documents(tmp_path, "pipe.txt", "pipe.txt", InputSettings())
    assert result.skipped and result.warnings == ["pipe.txt: skipped, could not be read (pipe.txt is a named pipe)"]
    with pytest.raises(OSError, match="pipe.txt is a named pipe"):
        file_hash(tmp_path / "pipe.txt")


def test_random_high_bytes_under_a_text_name_are_skipped_as_binary(tmp_path: Path) -> None:
    noise = bytes((byte * 131 + 7) % 128 + 128 for byte in range(4096))  # high bytes only: no NUL, no controls
    result = read(tmp_path, "noise.txt", noise)
    assert result.skipped and result.frame.is_empty()
    assert len(result.warnings) == 1 and result.warnings[0].startswith("noise.txt: skipped, ")
    assert "not valid utf-8, so it is binary or in another encoding" in result.warnings[0]
    # Text in another 8-bit encoding read as UTF-8 is still read, with its few bad bytes counted.
    latin = read(tmp_path, "latin.txt", "Le café de la gare, près du quai, ouvre à six heures.".encode("latin-1"))
    assert not latin.skipped and latin.replaced_chars == 3 and "were replaced" in latin.warnings[0]


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        (
            "id,text\nrow-1,first\nrow-2,second\nrow-1,third\n",
            "rows #0 and #2 have the same id 'row-1' in input.id_column 'id'",
        ),
        (
            "id,text\n1,first\n,second\n",
            "rows #0 and #1 have the same id '1' in input.id_column 'id' (row #1 has none and is named by its number)",
        ),
    ],
)
def test_duplicate_row_ids_refuse_the_whole_file(tmp_path: Path, rows: str, problem: str) -> None:
    result = read(tmp_path, "rows.csv", rows, id_column="id")
    assert result.skipped and result.frame.is_empty()
    assert result.warnings == [f"rows.csv: skipped, {problem}; give every row its own id"]
    records = "\n".join(f'{{"id": "{key}", "text": "t{n}"}}' for n, key in enumerate(["a", "b", "a"]))
    lines = read(tmp_path, "rows.jsonl", records, id_column="id")
    assert lines.skipped and "rows #0 and #2 have the same id 'a'" in lines.warnings[0]
    unique = read(tmp_path, "unique.csv", "id,text\nrow-1,first\nrow-2,second\n", id_column="id")
    assert unique.warnings == [] and unique.frame["id"].n_unique() == 2


@pytest.mark.parametrize(
    ("rows", "line"),
    [
        ('title,text\nA,first\nB,"second, never closed\nC,third\nD,fourth\n', 3),
        ('title,text\nA,"multi\nline"\n\nB,second\nC,"open', 6),
        ('title,"text\nA,first\n', 1),
    ],
)
def test_an_unclosed_csv_quote_is_named_with_its_line_not_swallowing_rows(tmp_path: Path, rows: str, line: int) -> None:
    result = read(tmp_path, "quotes.csv", rows)
    assert result.skipped and result.frame.is_empty()
    assert result.warnings == [
        f"quotes.csv: skipped, it could not be parsed as CSV (a quote in the row starting on line {line} is never "
        'closed, so the rest of the file would be read as one value; close it, or write a quote inside a value as "")'
    ]


def test_closed_quotes_and_blank_lines_read_as_before(tmp_path: Path) -> None:
    rows = 'title,text\r\nA,"multi\r\nline, with ""quotes"""\r\n\r\nB,second\r\nC'
    result = read(tmp_path, "fine.csv", rows)
    assert result.frame["text"].to_list() == ['multi\nline, with "quotes"', "second"]
    assert result.warnings == ["fine.csv: skipped 1 row(s) with an empty 'text'"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_index_passes_over_bad_names_and_pipes_and_later_deletions_reach_the_graph(
    tmp_path: Path, offline_env: None
) -> None:
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.indexing import index_project

    root = make_project(tmp_path / "project")
    (root / "graphrag.yaml").write_text("method: nlp\nllm:\n  embeddings: local\n", encoding="utf-8")
    input_dir = root / "data" / "input"
    write_bytes_name(input_dir, NOT_UTF8, "Café Odile opened on the quay of Vellmouth.".encode())
    os.mkfifo(input_dir / "pipe.txt")
    expected = sorted(
        f.path for f in scan_input_files(input_dir, load_settings(root, environ={}).input.file_types).files
    )
    report = index_project(load_settings(root, environ={}))
    assert report.success, report.as_dict()
    assert report.changes.passed_over == [NOT_UTF8_WARNING, "pipe.txt: skipped, it is a named pipe, not a regular file"]
    assert [row[0] for row in query_db(root, "select distinct path from documents order by path")] == expected

    (input_dir / "letter_holm_to_varga.txt").unlink()
    report = index_project(load_settings(root, environ={}))
    assert report.success and report.changes.deleted == ["letter_holm_to_varga.txt"], report.as_dict()
    assert any(run["job"] == "corpus_job" for run in report.runs)
    assert query_db(root, "select count(*) from documents where path = 'letter_holm_to_varga.txt'") == [(0,)]
    cited_but_gone = """
        select count(*) from (select unnest(text_unit_ids) as unit from entities)
        where unit not in (select id from text_units)"""
    assert query_db(root, cited_but_gone) == [(0,)]
