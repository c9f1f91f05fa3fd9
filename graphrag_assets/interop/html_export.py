"""Export the index as one self-contained HTML page to look at: the community map and each
community's entity graph, with entity search and the reports (see :mod:`.graph_view`).

Everything the page needs is inside the file (script, style, data): it opens from disk, offline,
and fetches nothing.
"""

from __future__ import annotations

from pathlib import Path

from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.common import ExportResult, prepare_output_dir, read_index_tables
from graphrag_assets.interop.graph_view.data import view_data
from graphrag_assets.interop.graph_view.page import render_page

FILE_NAME = "graph.html"
VIEW_TABLES = ("entities", "relationships", "communities", "community_reports")


def export_html(settings: Settings, out_dir: Path, *, force: bool = False) -> ExportResult:
    """Write ``out_dir/graph.html``."""
    data = view_data(read_index_tables(settings, VIEW_TABLES), title=f"{settings.root.name}: knowledge graph")
    prepare_output_dir(out_dir, [FILE_NAME], force=force)
    (out_dir / FILE_NAME).write_text(render_page(data), encoding="utf-8")
    rows = {
        "entities": len(data["entities"]["title"]),
        "relationships": len(data["relationships"]),
        "communities": len(data["communities"]),
    }
    return ExportResult(format="html", out_dir=out_dir, files=[FILE_NAME], rows=rows)
