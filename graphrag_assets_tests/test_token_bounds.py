"""A cold query does not load the tokenizer when bounds decide, and bounds decide as counting would.

Loading cl100k_base (100,256 ranks decoded, then the Rust encoder built) was a third of a cold
`query --method basic`. Budgets come from stored token counts plus short cells, and a token covers
at least one byte, so a table that fits by its byte bound needs no count; a table whose rows
straddle the budget is counted, and either way the rows kept are those of counting every line.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from graphrag_assets.core.tokens import TokenCounter
from graphrag_assets.query.context_tables import fill_table, sized_row

# tiktoken keeps every encoding it built in tiktoken.registry.ENCODINGS; reported at exit.
PROBE = """
import atexit, json, sys
def report():
    registry = sys.modules.get("tiktoken.registry")
    print(json.dumps(sorted(registry.ENCODINGS) if registry else []), file=sys.stderr)
atexit.register(report)
sys.argv = ["graphrag-assets", *json.loads(sys.argv[1])]
from graphrag_assets.cli.main import main
try:
    main()
except SystemExit as exit:
    code = exit.code
"""


def encodings_loaded_by(args: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_a_cold_basic_query_never_loads_the_tokenizer(nlp_index: Path) -> None:
    question = "Who is Søren Holm, and what did he do during Storm Odile?"
    assert encodings_loaded_by(["query", question, "--method", "basic", "--root", str(nlp_index)]) == []


class Words:
    """A test counter: one token per word plus the newline; ``at_most`` bounds it by characters."""

    def __init__(self, bounds: bool) -> None:
        if bounds:
            self.at_most = lambda text: len(text) + 1

    def __call__(self, text: str) -> int:
        return len(text.split()) + 1


def random_rows(rng: random.Random, n: int) -> tuple[list[tuple], list[tuple | None]]:
    vocabulary = ["tide", "harbour", "storm", "Søren", "keeper", "lamp", "reef", "x"]
    rows, shorter = [], []
    for index in range(n):
        text = " ".join(rng.choices(vocabulary, k=rng.randint(1, 40)))
        row = (index, text)
        if rng.random() < 0.5:  # a stored count of the long cell, as reports and sources have
            row = sized_row(row, 1, len(text.split()), Words(bounds=False))
        rows.append(row)
        shorter.append((index, text.split()[0]) if rng.random() < 0.5 else None)
    return rows, shorter


def test_tables_filled_from_bounds_keep_exactly_the_rows_counting_keeps() -> None:
    rng = random.Random(7)
    decided_by_bounds = 0
    for _ in range(400):
        rows, shorter = random_rows(rng, rng.randint(0, 12))
        more, _ = random_rows(rng, rng.randint(0, 6))
        budget = rng.randint(5, 700)
        tables = []
        for counter in (Words(bounds=False), Words(bounds=True)):
            first = fill_table("Reports", ["id", "content"], rows, budget, counter, shorter=shorter)
            second = fill_table("Entities", ["id", "text"], more, budget, counter, spent=[first])
            tables.append((first, second))
        (exact_first, exact_second), (first, second) = tables
        decided_by_bounds += not first.counted
        for exact, bounded in ((exact_first, first), (exact_second, second)):
            assert (bounded.text, bounded.rows_used, bounded.shortened) == (
                exact.text,
                exact.rows_used,
                exact.shortened,
            )
            assert bounded.tokens >= exact.tokens and bounded.exact_tokens(Words(bounds=False)) == exact.tokens
    assert decided_by_bounds > 50  # the bounds did decide a good share of the tables


def test_the_byte_bound_is_never_below_the_count() -> None:
    counter = TokenCounter()
    for text in ["", "Søren Holm", "風の谷のナウシカ 🌊🌊", "-----Sources-----\nid|text\n", "a" * 500]:
        assert counter.at_most(text) >= counter(text)


def test_a_row_whose_stored_count_alone_exceeds_the_budget_is_cut_without_counting() -> None:
    asked: list[str] = []

    def never(text: str) -> int:
        asked.append(text)
        return len(text.split()) + 1

    never.at_most = lambda text: len(text) + 1  # type: ignore[attr-defined]
    rows = [sized_row((0, "short"), 1, 10, never), sized_row((1, "long " * 300), 1, 300, never), (2, "tiny")]
    table = fill_table("Sources", ["id", "text"], rows, 200, never)
    assert (table.rows_used, table.cut, table.counted, asked) == (1, 2, False, [])
    assert table.text == "-----Sources-----\nid|text\n0|short"
