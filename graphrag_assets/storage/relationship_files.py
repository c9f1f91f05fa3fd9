"""One published build's relationships copied to files of their own, for a server's snapshot.

A server answers a request from the build it started on, even when a newer build is published
meanwhile; publishing replaces the tables in the database, so the old build's rows can no longer
be read from there. Holding the relationships in memory did it at 12 GB on a 100,000-document
index (15 M relationships). Instead, when a server loads a big build, its relationships are written
once into a folder of that snapshot that nothing else writes, and removed when the snapshot is no
longer used (:meth:`RelationshipFiles.remove`, also run by the garbage collector and at exit);
folders a killed server left behind are removed by the next server that starts on the project
(:func:`~graphrag_assets.storage.snapshot_folders.remove_left_over`). The folder holds, measured on that index:

- ``rows.arrow``: every column, in table order, uncompressed Arrow IPC mapped into memory, so a
  row is read by its position (``_row``) touching only its own pages: the 375 rows of a scattered
  set took 2.4 s from row groups of a Parquet file, which must decompress a whole group per row;
- ``starts.parquet``: the ends, keys and weight in table order, which the corpus step writes
  sorted by ``(source, target)``, so the row groups' min/max statistics find a source's rows;
- ``ends.parquet``: the same sorted by target, for the rows that touch a title by their target.

The rows touching three titles among 15 M (a hub's 37,000 included) are found in ~50 ms this way,
against ~0.4 s for a scan; DuckDB writes the files (its sort spills under a memory limit) and
polars and pyarrow read them, with no database connection or lock held between requests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from pyarrow import ipc
from pyarrow import parquet as pq

from graphrag_assets.core.schemas import RANKED_RELATIONSHIP_COLUMNS, conform
from graphrag_assets.core.schemas import RELATIONSHIPS as SCHEMA
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.snapshot_folders import snapshots_folder
from graphrag_assets.storage.table_names import RELATIONSHIPS
from graphrag_assets.storage.tables import quote

ROW = "_row"  # the row's position in the relationships table
ROWS, STARTS, ENDS = "rows.arrow", "starts.parquet", "ends.parquet"
NUMBERED = "numbered"  # present when every row's human_readable_id is its position
TITLES = "titles.parquet"  # every end's title, sorted: a title's code is its row
SIDES = {"source": "target", "target": "source"}  # an end, and the other end
ROW_GROUP_ROWS = 4_096  # what a lookup reads at least per matching row group: small groups prune finely
BATCH_ROWS = 65_536
MAX_SLICES = 1_000  # runs of consecutive rows read as slices; past it, taken batch by batch
KEY_COLUMNS = ("id", "human_readable_id", "source", "target", "weight")  # enough to rank by the ends
EXPORT_MEMORY_LIMIT = "1GB"  # DuckDB's sort spills to disk past it


class RelationshipFiles:
    """The relationships of one build in the files of the module docstring.

    Every method returns rows in table order with the schema's columns (``columns`` only, when given).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._remove = weakref.finalize(self, shutil.rmtree, folder, True)
        file = ipc.open_file(pa.memory_map(str(folder / ROWS)))  # mapped, not read
        self._batches = [file.get_batch(i) for i in range(file.num_record_batches)]
        self._starts = np.cumsum([0, *(b.num_rows for b in self._batches)])  # the first position of each batch
        self.rows = int(self._starts[-1])
        self._schema = file.schema
        self._present = set(file.schema.names)  # an older build may lack a column
        self._keys = set(pl.read_parquet_schema(folder / STARTS))
        self._numbered = (folder / NUMBERED).exists()
        self._ends: dict[str, EndIndex] = {}
        self._code: dict[str, int] = {}
        if (folder / TITLES).exists():
            self._code = {title: code for code, title in enumerate(pl.read_parquet(folder / TITLES)["title"])}
            self._ends = {side: EndIndex.open(folder, side) for side in SIDES}
        self._vertex_codes: tuple[Sequence[str], np.ndarray, np.ndarray] | None = None

    @classmethod
    def export(cls, database: Path) -> RelationshipFiles:
        """Copy the relationships of the build published in ``database`` into a new folder."""
        folder = snapshots_folder(database) / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
        try:
            with connect(database, read_only=True) as conn:
                present = {row[0] for row in conn.execute(f"describe {quote(RELATIONSHIPS)}").fetchall()}
                # set, not passed as connect config (another open connection of this process may
                # differ); reset after, as the instance is shared
                conn.execute(f"set memory_limit = '{EXPORT_MEMORY_LIMIT}'")
                try:
                    select = ", ".join(quote(c) for c in SCHEMA if c in present)
                    if _write_rows(conn.sql(f"select {select} from {quote(RELATIONSHIPS)}"), folder):
                        (folder / NUMBERED).touch()
                    keys = ", ".join([ROW, *(quote(c) for c in KEY_COLUMNS if c in present)])
                    options = f"(format parquet, compression snappy, row_group_size {ROW_GROUP_ROWS})"
                    conn.execute(
                        f"copy (select {keys} from read_parquet('{folder / STARTS}') order by target, {ROW}) "
                        f"to '{folder / ENDS}' {options}"
                    )
                    _write_end_indexes(conn, folder)
                finally:
                    conn.execute("reset memory_limit")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(folder)

    def remove(self) -> None:
        """Delete the files (once; a later call does nothing)."""
        self._remove()

    def _kept(self, columns: Sequence[str], present: set[str]) -> list[str]:
        return [ROW, *(c for c in SCHEMA if (not columns or c in columns) and c in present)]

    def _whole(self, found: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
        """The rows at the positions ``found[_row]`` (sorted), read from the mapped rows when the
        keys in ``found`` lack a wanted column."""
        schema = {c: t for c, t in SCHEMA.items() if not columns or c in columns}
        if set(self._kept(columns, self._present)) - self._keys:
            found = self._take(found[ROW].to_numpy(), self._kept(columns, self._present))
        return conform(found, schema)

    def _take(self, positions: np.ndarray, columns: list[str]) -> pl.DataFrame:
        """The rows at ``positions`` (sorted), as zero-copy slices of the mapped file, one per run
        of consecutive rows: pyarrow's ``take`` reads a whole column of a batch (370 MB of ids for
        375 rows), a slice only the rows' own bytes."""
        if not len(positions):
            return pl.from_arrow(_subset(self._schema, columns).empty_table())  # type: ignore[return-value]
        batch_of = np.searchsorted(self._starts, positions, side="right") - 1
        local = positions - self._starts[batch_of]
        cuts = np.flatnonzero((np.diff(local) != 1) | (np.diff(batch_of) != 0)) + 1
        if len(cuts) >= MAX_SLICES:  # thousands of scattered rows (a hub's): one take per batch is faster
            taken = [self._batches[b].select(columns).take(pa.array(local[batch_of == b])) for b in np.unique(batch_of)]
            return _frame(pa.Table.from_batches(taken, _subset(self._schema, columns)))
        firsts = np.concatenate([[0], cuts])
        lengths = np.diff(np.concatenate([firsts, [len(positions)]]))
        pieces = [
            self._batches[batch_of[i]].select(columns).slice(local[i], n)
            for i, n in zip(firsts.tolist(), lengths.tolist())
        ]
        return _frame(pa.Table.from_batches(pieces, _subset(self._schema, columns)))

    def _keys_where(self, path: str, where: pl.Expr, columns: Sequence[str]) -> pl.LazyFrame:
        return pl.scan_parquet(self.folder / path).filter(where).select(self._kept(columns, self._keys))

    def touching(self, titles: Sequence[str], columns: Sequence[str] = ()) -> pl.DataFrame:
        """The relationships with an end among ``titles``: found by source, or by target alone, in
        the sorted keys, then read whole by position when more than the keys is wanted."""
        wanted = list(dict.fromkeys(titles))
        by_source = pl.col("source").is_in(wanted)
        found = pl.concat(
            [
                self._keys_where(STARTS, by_source, columns),
                self._keys_where(ENDS, pl.col("target").is_in(wanted) & ~by_source.fill_null(False), columns),
            ]
        )
        return self._whole(found.collect().sort(ROW), columns)

    def rows_where(self, column: str, values: Sequence[Any], columns: Sequence[str] = ()) -> pl.DataFrame:
        """The relationships whose ``column`` is among ``values`` (a key column: found in the keys;
        the row groups' statistics skip most of them for ``source`` and ``human_readable_id``)."""
        if column == "human_readable_id" and self._numbered:  # the numbers are the positions: no search
            wanted = np.unique(np.asarray([v for v in values if v is not None], dtype=np.int64))
            positions = wanted[(wanted >= 0) & (wanted < self.rows)]
            schema = {c: t for c, t in SCHEMA.items() if not columns or c in columns}
            return conform(self._take(positions, self._kept(columns, self._present)), schema)
        where = pl.col(column).is_in(list(values)) if column in self._present else pl.lit(False)
        if column in self._keys or column not in self._present:
            return self._whole(self._keys_where(STARTS, where, columns).collect(), columns)
        rows = pl.scan_ipc(self.folder / ROWS).filter(where).select(self._kept(columns, self._present))
        return self._whole(rows.collect(), columns)

    def ranked_touching(
        self, titles: Sequence[str], vertex_titles: Sequence[str], vertex_scores: np.ndarray, cap: int
    ) -> pl.DataFrame | None:
        """The ``cap`` relationships with an end among ``titles`` that score highest by the sum of
        their ends' scores (``vertex_scores[i]`` is the score of ``vertex_titles[i]``, the first
        of a repeated title counting; other ends score 0), ties by ``human_readable_id``; in rank
        order, key columns only. None when the files cannot rank so (no end index, or numbers that
        are not positions): the caller ranks :meth:`touching`'s rows.

        Found through the ends' indexes without reading a row: a hub's 165,000 relationships were
        read and ranked as frames in ~100 ms a question; here only the ``cap`` best are read.
        """
        if not self._ends or not self._numbered:
            return None
        codes = np.unique(np.asarray([self._code[t] for t in set(titles) if t in self._code], dtype=np.int64))
        score = self._scores_by_code(vertex_titles, vertex_scores)
        by_source = self._ends["source"].entries(codes)
        by_target = self._ends["target"].entries(codes)
        by_target = tuple(part[~np.isin(by_target[2], codes)] for part in by_target)  # found by source already
        own, rows, other = (np.concatenate(parts) for parts in zip(by_source, by_target))
        totals = score[own] + score[other]
        best = rows[np.lexsort((rows, -totals))[:cap]]
        kept = self._kept(RANKED_RELATIONSHIP_COLUMNS, self._present)
        found = self._take(np.sort(best), kept)
        order = pl.DataFrame({ROW: best}).with_row_index("_rank")
        ranked = found.join(order, on=ROW).sort("_rank").drop("_rank")
        return conform(ranked, {c: SCHEMA[c] for c in kept if c != ROW})

    def _scores_by_code(self, vertex_titles: Sequence[str], vertex_scores: np.ndarray) -> np.ndarray:
        """Each end title's score by code, and a last 0 for ends without a title (code -1)."""
        cached = self._vertex_codes
        if cached is None or cached[0] is not vertex_titles:  # the same graph, request after request
            first: dict[str, int] = {}
            for vertex, title in enumerate(vertex_titles):
                if title in self._code:
                    first.setdefault(title, vertex)
            vertices = np.fromiter(first.values(), dtype=np.int64, count=len(first))
            codes = np.fromiter((self._code[t] for t in first), dtype=np.int64, count=len(first))
            cached = self._vertex_codes = (vertex_titles, vertices, codes)
        score = np.zeros(len(self._code) + 1)
        score[cached[2]] = vertex_scores[cached[1]]
        return score

    def columns_of(self, columns: Sequence[str] = ()) -> pl.DataFrame:
        """``columns`` (default: all) of every relationship."""
        schema = {c: t for c, t in SCHEMA.items() if not columns or c in columns}
        return conform(self._take(np.arange(self.rows), self._kept(columns, self._present)), schema)


def _write_rows(result: Any, folder: Path) -> bool:
    """The rows of a DuckDB result into an uncompressed Arrow IPC file, batch by batch, each row
    with its position (``_row``), and their keys into a Parquet file in the same pass; True when
    every row's ``human_readable_id`` is its position (the corpus step numbers them so), which
    lets a request find rows by number without a search (~95 ms per question at 15 M rows)."""
    batches = result.to_arrow_reader(BATCH_ROWS)
    schema = batches.schema.append(pa.field(ROW, pa.int64()))
    keys = _subset(schema, [ROW, *(c for c in KEY_COLUMNS if c in schema.names)])
    offset, numbered = 0, "human_readable_id" in schema.names
    with (
        contextlib.closing(batches),
        pa.OSFile(str(folder / ROWS), "wb") as sink,
        ipc.new_file(sink, schema) as rows,
        pq.ParquetWriter(folder / STARTS, keys, compression="snappy") as starts,
    ):
        for batch in batches:
            numbers = np.arange(offset, offset + batch.num_rows, dtype=np.int64)
            positions = pa.array(numbers)
            if numbered:
                ids = batch.column("human_readable_id")
                numbered = ids.null_count == 0 and np.array_equal(ids.to_numpy(zero_copy_only=False), numbers)
            whole = pa.RecordBatch.from_arrays([*batch.columns, positions], schema=schema)
            rows.write_batch(whole)
            starts.write_table(pa.Table.from_batches([whole.select(keys.names)]), row_group_size=ROW_GROUP_ROWS)
            offset += batch.num_rows
    return numbered


class EndIndex:
    """The rows by one end's title: for code ``c`` (a row of ``titles.parquet``), entries
    ``offsets[c]:offsets[c+1]`` hold the rows with that end (``rows``, ascending) and their other
    end's code (``other``, -1 when it has no title). Memory-mapped .npy files."""

    def __init__(self, offsets: np.ndarray, rows: np.ndarray, other: np.ndarray) -> None:
        self.offsets, self.rows, self.other = offsets, rows, other

    @classmethod
    def open(cls, folder: Path, side: str) -> EndIndex:
        return cls(*(np.load(folder / f"{side}.{part}.npy", mmap_mode="r") for part in ("offsets", "rows", "other")))

    def entries(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(own code, row, other end's code) of every entry of ``codes``."""
        spans = [(int(self.offsets[c]), int(self.offsets[c + 1])) for c in codes.tolist()]
        own = np.repeat(codes, [end - start for start, end in spans]).astype(np.int64)
        rows = np.concatenate([self.rows[start:end] for start, end in spans] or [np.zeros(0, np.int64)])
        other = np.concatenate([self.other[start:end] for start, end in spans] or [np.zeros(0, np.int64)])
        return own, rows.astype(np.int64), other.astype(np.int64)


def _write_end_indexes(conn: Any, folder: Path) -> None:
    """``titles.parquet`` and each end's :class:`EndIndex`, from the keys (sorted by DuckDB, which spills)."""
    keys = f"read_parquet('{folder / STARTS}')"
    conn.execute(
        f"copy (select distinct title from (select source as title from {keys} union all "
        f"select target from {keys}) where title is not null order by title) to '{folder / TITLES}' (format parquet)"
    )
    # a title's code is its row in the file, as the reader numbers them
    titles = f"(select title, file_row_number::integer as code from read_parquet('{folder / TITLES}', file_row_number = true))"
    count = conn.execute(f"select count(*) from read_parquet('{folder / TITLES}')").fetchall()[0][0]
    for side, other in SIDES.items():
        total = conn.execute(f"select count({side}) from {keys}").fetchall()[0][0]
        rows = np.lib.format.open_memmap(folder / f"{side}.rows.npy", mode="w+", dtype=np.int64, shape=(total,))
        others = np.lib.format.open_memmap(folder / f"{side}.other.npy", mode="w+", dtype=np.int32, shape=(total,))
        counts = np.zeros(count, dtype=np.int64)
        reader = conn.sql(
            f"select o.code as own, k.{ROW} as row, coalesce(t.code, -1) as other from {keys} k "
            f"join {titles} o on k.{side} = o.title left join {titles} t on k.{other} = t.title "
            f"order by own, row"
        ).to_arrow_reader(BATCH_ROWS)
        at = 0
        with contextlib.closing(reader):
            for batch in reader:
                n = batch.num_rows
                rows[at : at + n] = batch.column("row").to_numpy()
                others[at : at + n] = batch.column("other").to_numpy()
                counts += np.bincount(batch.column("own").to_numpy(), minlength=count)
                at += n
        rows.flush()
        others.flush()
        del rows, others
        np.save(folder / f"{side}.offsets.npy", np.concatenate([[0], np.cumsum(counts)]))


def _subset(schema: pa.Schema, names: Sequence[str]) -> pa.Schema:
    return pa.schema([schema.field(name) for name in names])


def _frame(table: pa.Table) -> pl.DataFrame:
    """``table``, a few slices of the mapped file, as one polars frame of its own."""
    return pl.from_arrow(table.combine_chunks())  # type: ignore[return-value]
