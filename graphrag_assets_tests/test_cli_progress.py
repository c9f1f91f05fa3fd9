"""Progress without a terminal comes as plain lines; `index -v` shows Dagster's own log lines; a
count follows the calls as they finish."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from graphrag_assets.cli.progress import LINE_INTERVAL_SECONDS, ProgressLines
from graphrag_assets.core import progress
from graphrag_assets.core.progress import Counter
from graphrag_assets.index.corpus_graph import _summaries_with_progress
from graphrag_assets.index.summarize import SummaryOptions
from graphrag_assets.llm.types import ChatResult
from graphrag_assets.prompts.templates import PromptTemplate
from graphrag_assets_testkit.builds import run_index
from graphrag_assets_testkit.projects import make_project


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_at_the_start_every_tenth_or_interval_and_at_the_end() -> None:
    lines: list[str] = []
    clock = Clock()
    listener = ProgressLines(lines.append, clock)
    for done in range(0, 101):
        listener("extract graph", done, 100)
    assert lines == [f"extract graph {n}/100" for n in range(0, 100, 10)] + ["extract graph 100/100 done"]
    lines.clear()
    listener("summarize descriptions", 0, 1000)
    listener("summarize descriptions", 1, 1000)  # too soon, too little
    clock.now += LINE_INTERVAL_SECONDS
    listener("summarize descriptions", 2, 1000)
    listener("extract graph", 0, 3)  # the next run's stage of that name starts again
    assert lines == ["summarize descriptions 0/1,000", "summarize descriptions 2/1,000", "extract graph 0/3"]


class OneByOneModel:
    """Stand-in for the external model: answers each summary after a delay of its own, so they finish one by one."""

    model = "scripted"

    async def chat(self, messages, *, purpose, options=None) -> ChatResult:
        name = messages[0]["content"].split("NAME ", 1)[1].split(" ", 1)[0]
        await asyncio.sleep(0.01 * int(name.strip('"')))
        return ChatResult(text=f"summary of {name}", prompt_tokens=1, completion_tokens=1, cached=False)


def test_the_summaries_count_moves_as_each_call_finishes() -> None:
    seen: list[int] = []
    progress.set_listener(lambda stage, done, total: seen.append(done))
    try:
        items = [(str(n), ["one", "two"]) for n in range(5)]
        template = PromptTemplate("t", "NAME {entity_name} LIST {description_list} MAX {max_length}")
        options = SummaryOptions(template, count_tokens=lambda text: len(text.split()))
        counter = Counter("summarize descriptions", len(items)).start()
        summaries = asyncio.run(_summaries_with_progress(OneByOneModel(), items, options, 100, counter))
    finally:
        progress.set_listener(None)
    assert len(summaries) == 5 and seen == [0, 1, 2, 3, 4, 5]


@pytest.mark.slow
@pytest.mark.parametrize("corpus_processes", ["never", "always"])
def test_index_without_a_terminal_prints_progress_and_v_prints_dagster_lines(
    tmp_path: Path, corpus_processes: str
) -> None:
    root = make_project(tmp_path / "project", with_sample=False)
    with (root / "graphrag.yaml").open("a", encoding="utf-8") as settings:  # the corpus steps in this process or apart
        settings.write(f"index:\n  corpus_processes: {corpus_processes}\n")
    sample = make_project(tmp_path / "sample") / "data" / "input"
    first, second = sorted(path for path in sample.iterdir() if path.is_file())[:2]
    shutil.copy(first, root / "data" / "input")
    quiet = run_index(root)  # stderr is a pipe here, as under nohup or in CI
    assert quiet.returncode == 0, quiet.stderr
    assert "ingest 0/1\n" in quiet.stderr and "ingest 1/1 done\n" in quiet.stderr
    assert "noun phrases 1/1 done" in quiet.stderr and "STEP_START" not in quiet.stderr
    assert "Warning" not in quiet.stderr, quiet.stderr  # e.g. Dagster's BetaWarning on backfill_policy
    assert "communities 0/1\n" in quiet.stderr and "publish the build 1/1 done\n" in quiet.stderr
    shutil.copy(second, root / "data" / "input")
    verbose = run_index(root, "-v")
    assert verbose.returncode == 0, verbose.stderr
    assert "ingest 1/1 done" in verbose.stderr  # still there, as lines
    assert "STEP_START" in verbose.stderr and "dagster - DEBUG - document_job" in verbose.stderr
    assert "publish the build 1/1 done" in verbose.stderr and "dagster - DEBUG - corpus_job" in verbose.stderr
