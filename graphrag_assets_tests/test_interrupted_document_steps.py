"""A document run stopped between the writes of one step is finished by the next `index`, once.

Extraction writes ``graph_extractions`` and then ``extraction_status``, each recorded in
``document_steps`` on its own; a Ctrl-C between them left a document whose extraction was
recorded but whose status was not. Every later `index` (`--full` too) planned that document and
the corpus job again, and extraction found nothing to do. Deleting that one bookkeeping row is the
state the interrupt left.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from graphrag_assets.storage.database import connect
from graphrag_assets_testkit.builds import run_index
from graphrag_assets_testkit.projects import query_db

DOCUMENT = "letter_holm_to_varga.txt"
STATUS_RECORDED = (
    f"select count(*) from document_steps where step = 'extraction_status' and document_key = '{DOCUMENT}'"
)


def test_a_document_whose_extraction_status_was_not_recorded_is_redone_once(nlp_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    with_status = query_db(root, f"select * from extraction_status where document_key = '{DOCUMENT}'")
    with connect(root / "data" / "graphrag.duckdb") as conn:
        conn.execute(f"delete from document_steps where step = 'extraction_status' and document_key = '{DOCUMENT}'")

    repair = run_index(root)
    assert repair.returncode == 0, repair.stderr
    assert "0 new, 1 changed, 0 deleted" in repair.stderr + repair.stdout
    assert query_db(root, STATUS_RECORDED) == [(1,)]
    assert query_db(root, f"select * from extraction_status where document_key = '{DOCUMENT}'") == with_status

    idle = run_index(root)
    assert idle.returncode == 0, idle.stderr
    assert "nothing to do: the index is up to date" in idle.stderr + idle.stdout
