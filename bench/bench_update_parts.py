"""Parts of an update's corpus steps, each timed on its own on a kept index (issue 35: one added document).

    python bench/bench_update_parts.py --index ROOT [--baseline SRC] [--repeats 3] [--results NAME]

ROOT is a project ``bench_scale.py --keep`` built (e.g. 100,000 documents). A whole ``index`` after
one added document varies by ±10 s from run to run on this machine, more than most of its parts
take, so a change to one part is measured here, on the index's published tables, each repeat in a
fresh process (with ``--baseline SRC``, a folder holding another ``graphrag_assets`` package such as
a ``git archive`` of main, the two trees alternate, so both see the same machine):

- ``noun graph``: ``code_noun_graph`` over the index's noun-phrase records (the graph step's build
  of the unpruned co-occurrence graph);
- ``report fingerprints``: the extractive reports' fingerprints of every community (the reports
  step compares them with the previous build's to keep unchanged reports);
- ``LanceDB purge``: removing the text-unit vectors of documents that are gone, on a copy of the
  index's table where none is (what the graph step finds after a document was added);
- ``walk graph``: the local-search walk's matrix from the published graph (the publish step's
  ``store_walk_graph``, its inputs read first).

Printed once, with this tree: the relationships the newest document of ROOT (by file time)
changed, from the pruned graph built with and without its records. Results: printed as markdown
and written to ``bench/results/update_parts.json`` (or ``--results``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402  (bench/ is not a package)
    git_state,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    results_name,
    write_results,
)
from query_on_index import NEUTRAL_CWD, tree_env  # noqa: E402

PARTS = ("noun graph", "report fingerprints", "LanceDB purge", "walk graph")


def _connect(root: Path):
    import duckdb

    return duckdb.connect(str(root / "data" / "graphrag.duckdb"), read_only=True)


def _frame(conn, sql: str):
    import polars as pl

    return pl.from_arrow(conn.sql(sql).to_arrow_table())


def _noun_records(root: Path):
    from graphrag_assets.index.corpus_graph import NOUN_GRAPH_COLUMNS

    with _connect(root) as conn:
        return _frame(conn, f"select {', '.join(NOUN_GRAPH_COLUMNS)} from graph_extractions")


def time_part(part: str, root: Path) -> float:
    """Seconds of one ``part`` on the index at ``root`` (its inputs read first, not timed)."""
    if part == "noun graph":
        from graphrag_assets.index.nlp_graph import code_noun_graph

        records = _noun_records(root)
        started = time.perf_counter()
        code_noun_graph(records)
        return time.perf_counter() - started
    if part == "report fingerprints":
        from graphrag_assets.index.extractive_reports import community_plans
        from graphrag_assets.index.extractive_reuse import _Fingerprints

        with _connect(root) as conn:
            communities = _frame(conn, "select * exclude (relationship_ids) from communities")
            entities = _frame(conn, "select * from entities")
            units = _frame(conn, "select id, text from text_units order by document_key, chunk_index")
        plans = community_plans(communities, entities)
        started = time.perf_counter()
        _Fingerprints(plans, [0] * len(plans), entities, units, 5)
        return time.perf_counter() - started
    if part == "walk graph":
        from graphrag_assets.index.walk_graph import walk_matrix
        from graphrag_assets.storage.walk_tables import walk_inputs

        found = walk_inputs(root / "data" / "graphrag.duckdb")
        arrays = ("link_ends", "link_weight", "mention_entity", "mention_unit")
        started = time.perf_counter()
        walk_matrix(found["entity_count"], found["unit_count"], *(found[name] for name in arrays))
        return time.perf_counter() - started
    from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, delete_scopes_except, lancedb_module

    with _connect(root) as conn:
        keep = [row[0] for row in conn.execute("select document_key from documents").fetchall()]
    lancedb_module()  # imported before the clock: the step imports it once, whatever it deletes
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "lancedb"
        shutil.copytree(root / "data" / "lancedb" / f"{TEXT_UNIT_TABLE}.lance", copy / f"{TEXT_UNIT_TABLE}.lance")
        started = time.perf_counter()
        delete_scopes_except(copy, TEXT_UNIT_TABLE, "document_key", keep)
        return time.perf_counter() - started


def relationship_delta(root: Path) -> dict[str, Any]:
    """How the pruned graph's relationships differ without the newest document's records."""
    import polars as pl

    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.index.nlp_graph import code_noun_graph, prune_codes

    with _connect(root) as conn:
        newest = conn.execute("select document_key from source_files order by mtime_ns desc limit 1").fetchone()[0]
        units = [r[0] for r in conn.execute("select id from text_units where document_key = ?", [newest]).fetchall()]
    records = _noun_records(root)
    prune = load_settings(root, environ={}).nlp.prune

    def kept(frame: pl.DataFrame) -> pl.DataFrame:
        graph = code_noun_graph(frame)
        edges = prune_codes(graph, prune).edges
        titles = graph.nodes["title"]
        return pl.DataFrame(
            {
                "source": titles.gather(graph.source[edges]),
                "target": titles.gather(graph.target[edges]),
                "units": graph.raw_weight[edges],
                "weight": graph.weight[edges],
            }
        )

    before, after = kept(records.filter(~pl.col("text_unit_id").is_in(units))), kept(records)
    both = before.join(after, on=["source", "target"], how="full", coalesce=True, suffix="_after")
    common = both.filter(pl.col("units").is_not_null() & pl.col("units_after").is_not_null())
    return {
        "document": newest,
        "relationships_before": before.height,
        "relationships_after": after.height,
        "removed": both.filter(pl.col("units_after").is_null()).height,
        "added": both.filter(pl.col("units").is_null()).height,
        "units_changed": common.filter(pl.col("units") != pl.col("units_after")).height,
        "weight_changed": common.filter(pl.col("weight") != pl.col("weight_after")).height,
    }


def run_tree(part: str, root: Path, source: Path | None) -> float:
    """One repeat of ``part`` in a fresh process running the package at ``source`` (None: this one)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--index", str(root), "--part", part]
    done = subprocess.run(command, env=tree_env(source), cwd=NEUTRAL_CWD, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{part} failed under {source or 'this tree'}: {done.stderr.strip()[-2000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a kept project (bench_scale.py --keep)")
    parser.add_argument("--baseline", type=Path, default=None, help="a folder holding another graphrag_assets tree")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=results_name, default="update_parts.json")
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)  # one repeat, in a child process
    args = parser.parse_args()
    root = args.index.resolve()
    if args.part:
        print(json.dumps({"seconds": time_part(args.part, root)}))
        return
    trees: dict[str, Path | None] = {"baseline": args.baseline.resolve()} if args.baseline else {}
    trees["this tree"] = None
    results: dict[str, Any] = {
        "command": invocation(),
        "machine": machine_info(),
        "git": git_state(),
        "load_start": load_average(),
    }
    seconds: dict[str, dict[str, list[float]]] = {part: {tree: [] for tree in trees} for part in PARTS}
    for part in PARTS:
        for _ in range(args.repeats):
            for tree, source in trees.items():
                seconds[part][tree].append(round(run_tree(part, root, source), 3))
    results["seconds"] = seconds
    results["relationship_delta"] = relationship_delta(root)
    results["load_end"] = load_average()
    headers = ["part"] + [f"{tree} s (min / median / max)" for tree in trees]
    rows = [[part] + [_spread(seconds[part][tree]) for tree in trees] for part in PARTS]
    print(f"load average {results['load_start']} -> {results['load_end']}; {args.repeats} repeats, trees alternating")
    print(markdown_table(headers, rows))
    print(json.dumps(results["relationship_delta"], indent=1))
    if args.results != "-":
        print(f"written: {write_results(args.results, results)}")


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


if __name__ == "__main__":
    main()
