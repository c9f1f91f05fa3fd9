"""Exactness of incremental indexing: after random adds, edits and deletes, the index equals a
from-scratch build over the final input (same model answers: the scripted server is deterministic),
with entity resolution off and on."""

import random
import shutil
from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE
from graphrag_assets_testkit.builds import IGNORED_COLUMNS, TABLE_ORDER
from graphrag_assets_tests.conftest import make_llm_project

SENTENCES = [
    "Marta Quell chairs the Vellmouth Fishing Cooperative.",
    "Rafael Duarte skippers the trawler Gull's Pride for the Vellmouth Fishing Cooperative.",
    "Søren Holm keeps the Kestrel Point Lighthouse.",
    "Søren Holm relayed a mayday from Rafael Duarte during Storm Odile.",
    "Lucien Marchetti runs Auberon Freight Lines in Port Auberon.",
    "Auberon Freight Lines planned to dredge the Greywater Channel.",
    "Dr. Ines Varga directs the Halden Marine Institute.",
    "Piet Oduya dives at Sable Reef for the Halden Marine Institute.",
    "Helga Brandt is harbour master of Port Auberon.",
    "Mayor Tobias Renn leads the Vellmouth Town Council.",
    "Zoë Alvarez owns Café Brisa and organises the Lantern Festival.",
    "Judge Amara Okafor ordered mediation between Marta Quell and Lucien Marchetti.",
    "Mira Santos commands the lifeboat Northern Grace of the Coastal Rescue Service.",
    "The Kestrel Accord was signed at Vellmouth Town Hall by Marta Quell and Lucien Marchetti.",
    "Quell thanked the crew of the Northern Grace.",
    "Varga and Holm counted seals at Sable Reef.",
]
RESOLUTION = "resolution:\n  enabled: true\n"
LANCEDB_ALWAYS = "storage:\n  lancedb_tables: always\n"  # the LanceDB tables are compared too


def write_doc(inputs: Path, name: str, rng: random.Random) -> None:
    body = " ".join(rng.sample(SENTENCES, rng.randint(2, 4)))
    (inputs / name).write_text(body, encoding="utf-8")


def tables(root: Path) -> dict[str, pl.DataFrame]:
    import duckdb

    out = {}
    with duckdb.connect(str(root / "data" / "graphrag.duckdb"), read_only=True) as conn:
        for table, order in TABLE_ORDER.items():
            frame = conn.sql(f"select * from {table}").pl()
            out[table] = frame.drop([c for c in frame.columns if c in IGNORED_COLUMNS]).sort(order)
    return out


@pytest.fixture(scope="module")
def initial(graphrag_server, tmp_path_factory: pytest.TempPathFactory):
    """The initial 5-document project, indexed once per resolution setting (built on first use)."""
    built: dict[bool, Path] = {}

    def project(resolution: bool) -> Path:
        if resolution not in built:
            root = tmp_path_factory.mktemp("equivalence") / "initial"
            make_llm_project(
                root,
                graphrag_server.base_url,
                with_sample=False,
                extra=LANCEDB_ALWAYS + (RESOLUTION if resolution else ""),
            )
            rng = random.Random(0)
            for i in range(5):
                write_doc(root / "data" / "input", f"doc{i}.txt", rng)
            assert index_project(load_settings(root)).success
            built[resolution] = root
        return built[resolution]

    return project


@pytest.mark.parametrize(("seed", "resolution"), [(1, False), (2, False), (3, True)])
def test_incremental_index_equals_a_rebuild(
    initial, graphrag_server, tmp_path: Path, seed: int, resolution: bool
) -> None:
    rng = random.Random(seed)
    root = tmp_path / "incremental"
    shutil.copytree(initial(resolution), root)
    inputs = root / "data" / "input"
    next_name = 100
    for _step in range(2):
        for _operation in range(rng.randint(1, 3)):
            present = sorted(p.name for p in inputs.iterdir())
            action = rng.choice(["add", "edit", "delete"] if len(present) > 2 else ["add", "edit"])
            if action == "add":
                write_doc(inputs, f"doc{next_name}.txt", rng)
                next_name += 1
            elif action == "edit":
                write_doc(inputs, rng.choice(present), rng)
            else:
                (inputs / rng.choice(present)).unlink()
        report = index_project(load_settings(root))
        assert report.success, report.as_dict()

    rebuilt = make_llm_project(
        tmp_path / "rebuilt",
        graphrag_server.base_url,
        with_sample=False,
        extra=LANCEDB_ALWAYS + (RESOLUTION if resolution else ""),
    )
    for path in sorted(inputs.iterdir()):
        shutil.copy2(path, rebuilt / "data" / "input" / path.name)
    assert index_project(load_settings(rebuilt)).success

    incremental_tables, rebuilt_tables = tables(root), tables(rebuilt)
    for name in TABLE_ORDER:
        assert incremental_tables[name].equals(rebuilt_tables[name]), name
    assert incremental_tables["entities"].height > 5 and incremental_tables["community_reports"].height > 0
    assert (incremental_tables["entity_aliases"].height > 0) == resolution
    for table in (TEXT_UNIT_TABLE, ENTITY_TABLE, REPORT_TABLE):
        ours, theirs = lance_rows(root, table), lance_rows(rebuilt, table)
        assert ours.height > 0 and ours.equals(theirs), table


def lance_rows(root: Path, table: str) -> pl.DataFrame:
    import lancedb

    rows = pl.from_arrow(lancedb.connect(str(root / "data" / "lancedb")).open_table(table).to_arrow())
    return rows.select("id", "text_hash", pl.col("vector").cast(pl.List(pl.Float32))).sort("id")
