"""`index` reads its state once: one scan of the input folder, one read of each state table.

The plan (project/index_plan.py) is read before anything runs and passed down to the idle check,
the partition planning and the document runs; what the runs changed is read once after them.
The real scan and the real table reads are wrapped with counters (they still do their work), and
`index` runs the way the CLI runs it (`plan_index`, then `index_project` with the same plan).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from graphrag_assets.core.buckets import is_bucket_key
from graphrag_assets.core.settings import load_settings
from graphrag_assets.index import changes, input_files
from graphrag_assets.pipeline import corpus_processes, indexing
from graphrag_assets.pipeline.idle_check import plan_index
from graphrag_assets.project import state
from graphrag_assets.project.index_run import IndexOptions, IndexReport
from graphrag_assets_testkit.projects import make_project

OFFLINE = "method: nlp\nllm:\n  embeddings: local\n"
BUCKETS = "partitions:\n  bucket_threshold: 2\n  buckets: 4\n"
DOCUMENTS = {
    "coop.txt": "Marta Quell chairs the Vellmouth Fishing Cooperative. Rafael Duarte fishes for it.",
    "light.txt": "Søren Holm keeps the Kestrel Point Lighthouse. Mira Santos visits Søren Holm.",
    "port.txt": "Lucien Marchetti runs Auberon Freight Lines. Helga Brandt meets Lucien Marchetti.",
}


class Reads:
    """What one `index` did, in order: ``scan``, ``read <table>`` and ``run <job>`` entries."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log: list[str] = []
        real_scan, real_read, real_run = input_files.scan_input_files, state.read_table, indexing.run_job

        def scan(*args, **kwargs):
            self.log.append("scan")
            return real_scan(*args, **kwargs)

        def read(path, table, **kwargs):
            self.log.append(f"read {table}")
            return real_read(path, table, **kwargs)

        def run(defs, instance, job, *args, **kwargs):
            self.log.append(f"run {job}")
            return real_run(defs, instance, job, *args, **kwargs)

        # every caller of the scan: change detection, and the ingest step's own discovery
        monkeypatch.setattr(changes, "scan_input_files", scan)
        monkeypatch.setattr(input_files, "scan_input_files", scan)
        monkeypatch.setattr(state, "read_table", read)
        monkeypatch.setattr(indexing, "run_job", run)
        monkeypatch.setattr(corpus_processes, "run_job", run)  # the corpus job, run in-process for a small corpus

    def scans(self) -> int:
        return self.log.count("scan")

    def _document_runs(self) -> list[int]:
        return [i for i, entry in enumerate(self.log) if entry == "run document_job"]

    def reads_before_runs(self) -> Counter:
        runs = self._document_runs()
        return Counter(e for e in self.log[: runs[0] if runs else None] if e.startswith("read "))

    def reads_between_runs(self) -> list[str]:
        runs = self._document_runs()
        return [e for e in self.log[runs[0] : runs[-1]] if e.startswith("read ")] if runs else []

    def reads_after_runs(self) -> Counter:
        """After the document runs (what they changed), the corpus run included."""
        runs = self._document_runs()
        return Counter(e for e in self.log[runs[-1] + 1 :] if e.startswith("read ")) if runs else Counter()


def project_with(root: Path, extra: str = "") -> Path:
    make_project(root, with_sample=False)
    (root / "graphrag.yaml").write_text(OFFLINE + extra, encoding="utf-8")
    for name, text in DOCUMENTS.items():
        (root / "data" / "input" / name).write_text(text, encoding="utf-8")
    return root


def index_as_the_cli_does(root: Path) -> IndexReport:
    settings = load_settings(root, environ={})
    plan, report = plan_index(settings, IndexOptions())
    return report if report is not None else indexing.index_project(settings, IndexOptions(), plan=plan)


def assert_read_once_per_phase(reads: Reads) -> None:
    assert reads.scans() == 1, reads.log
    assert max(reads.reads_before_runs().values()) == 1, reads.log
    assert reads.reads_between_runs() == [], reads.log
    assert max(reads.reads_after_runs().values(), default=1) == 1, reads.log


def test_index_with_work_scans_once_and_reads_each_table_once(tmp_path: Path, monkeypatch) -> None:
    root = project_with(tmp_path / "project")
    reads = Reads(monkeypatch)
    report = index_as_the_cli_does(root)
    assert report.success and sorted(report.changes.new) == sorted(DOCUMENTS)
    assert [e for e in reads.log if e.startswith("run ")] == ["run document_job", "run corpus_job"]
    assert_read_once_per_phase(reads)
    assert set(reads.reads_before_runs()) == {"read source_files", "read extraction_status", "read document_steps"}
    # after the runs: what they changed (failed extractions, files gone before their run read them)
    assert set(reads.reads_after_runs()) == {"read extraction_status", "read source_files"}

    # nothing to do: the same one scan and one read per table, and no run
    reads.log.clear()
    idle = index_as_the_cli_does(root)
    assert idle.runs == [] and not idle.changes.any
    assert reads.scans() == 1, reads.log
    assert set(reads.reads_before_runs().values()) == {1}, reads.log
    assert "read corpus_manifest" in reads.log


def test_bucketed_index_scans_once(tmp_path: Path, monkeypatch) -> None:
    root = project_with(tmp_path / "project", BUCKETS)
    reads = Reads(monkeypatch)
    report = index_as_the_cli_does(root)
    assert report.success and sorted(report.changes.new) == sorted(DOCUMENTS)
    assert all(is_bucket_key(run["partitions"][0]) for run in report.runs if run["job"] == "document_job")
    assert_read_once_per_phase(reads)

    # an edit in bucket mode: the ingest step takes its documents from the plan, not a second scan
    (root / "data" / "input" / "coop.txt").write_text("Marta Quell left the cooperative.", encoding="utf-8")
    reads.log.clear()
    report = index_as_the_cli_does(root)
    assert report.success and report.changes.changed == ["coop.txt"]
    assert_read_once_per_phase(reads)
