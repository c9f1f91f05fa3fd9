"""What an index run is asked (:class:`IndexOptions`) and what it did (:class:`IndexReport`).

Dagster-free, so ``graphrag-assets index`` can report "nothing to do" without importing Dagster
(:mod:`graphrag_assets.pipeline.idle_check`); :mod:`graphrag_assets.pipeline.indexing` fills them
for a real update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.index.changes import ChangeSet


@dataclass
class IndexReport:
    changes: ChangeSet
    runs: list[dict[str, Any]] = field(default_factory=list)
    deleted_rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    method: str = ""
    failed_documents: list[str] = field(default_factory=list)
    parse_failures: dict[str, int] = field(default_factory=dict)  # extraction records left out, by document
    vanished: list[str] = field(default_factory=list)  # new files deleted before their run read them
    graph: dict[str, int] = field(default_factory=dict)  # sizes of the published build after the run
    reports: dict[str, Any] = field(default_factory=dict)  # reused / regenerated / deleted and why
    usage: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return all(run["success"] for run in self.runs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "new": [key for key in self.changes.new if key not in self.vanished],
            "vanished": self.vanished,
            "graph": self.graph,
            "reports": self.reports,
            "changed": self.changes.changed,
            "deleted": self.changes.deleted,
            "unchanged": len(self.changes.unchanged),
            "runs": self.runs,
            "deleted_rows": self.deleted_rows,
            "failed_documents": self.failed_documents,
            "parse_failures": self.parse_failures,
            "usage": self.usage,
            "seconds": round(self.seconds, 3),
            "success": self.success,
        }


@dataclass(frozen=True)
class IndexOptions:
    """What the user asked of this update besides "bring the index up to date".

    ``overrides``: settings given on the command line (e.g. the method); ``force_corpus``: rebuild
    the corpus-wide assets even when nothing changed; ``allow_empty_input``: accept a missing or
    empty input folder, removing every document from the index; ``recluster``: run the corpus job
    even when nothing changed and make it cluster from scratch.
    """

    overrides: dict[str, Any] | None = None
    force_corpus: bool = False
    allow_empty_input: bool = False
    recluster: bool = False  # cluster communities from scratch (stable mode keeps them otherwise)
