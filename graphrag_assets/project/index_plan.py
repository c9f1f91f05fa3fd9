"""What one ``graphrag-assets index`` (or one sensor tick) found before it ran anything, read once.

Deciding what to do takes a scan of the input folder and reads of ``source_files``,
``extraction_status`` and the step table (:func:`graphrag_assets.project.state.document_state`),
plus, when no document changed, the corpus build's state. An :class:`IndexPlan` holds those
answers and is passed down — to the idle check, the partition planning and the document runs —
so a run with work scans the folder once and reads each of those tables once.

The document runs are Dagster steps, which get their inputs from Dagster, not from our call
stack. ``index`` executes them in its own process (in-process executor), so the plan is handed to
them for the duration of the runs (:meth:`IndexPlan.handed_to_runs`, a context variable) and the
ingest step takes the file paths and, in bucket mode, its documents from it
(:func:`handed_plan`). We chose this over run config or a file the plan writes: nothing large is
stored with every run, and nothing is left behind. A run that finds no plan for its project — one
launched from the UI, by the sensor in the daemon, or the retry of a failed extraction — works it
out itself, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from graphrag_assets.core.settings import Settings
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.project.state import DEFAULT_WAIT_SECONDS, DocumentState, corpus_is_stale, document_state
from graphrag_assets.storage.database import reading

_HANDED: ContextVar[IndexPlan | None] = ContextVar("graphrag_assets_index_plan", default=None)


@dataclass(frozen=True)
class IndexPlan:
    """The documents' state for one update of the project at ``root`` (see the module docstring)."""

    root: Path
    state: DocumentState
    settings: Settings = field(repr=False, compare=False)
    wait_seconds: float = DEFAULT_WAIT_SECONDS

    @classmethod
    def read(cls, settings: Settings, wait_seconds: float = DEFAULT_WAIT_SECONDS) -> IndexPlan:
        """One scan of the input folder and one read per state table (through one database open)."""
        with reading(settings.database_path):
            return cls(settings.root, document_state(settings, wait_seconds), settings, wait_seconds)

    @property
    def changes(self) -> ChangeSet:
        return self.state.changes

    @cached_property
    def corpus_stale(self) -> bool:
        """Whether the published corpus build is behind the documents or settings as planned
        (read on first use: a run with changed documents never needs it)."""
        return corpus_is_stale(self.settings, self.state.source_files, wait_seconds=self.wait_seconds)

    @contextlib.contextmanager
    def handed_to_runs(self) -> Iterator[None]:
        """Within the block, steps run in this thread for this project find the plan (:func:`handed_plan`)."""
        token = _HANDED.set(self)
        try:
            yield
        finally:
            _HANDED.reset(token)


def handed_plan(settings: Settings) -> IndexPlan | None:
    """The plan ``index`` handed to the runs it is executing for this project, if any."""
    plan = _HANDED.get()
    return plan if plan is not None and plan.root == settings.root else None
