"""Do offline (no-LLM) answers answer? Factoid questions on the sample corpus and *A Christmas Carol*.

    python bench/bench_extractive.py [--workdir /tmp/graphrag-bench/extractive] [--corpora sample carol]
                                     [--methods local basic] [--label NAME] [--text-unit-props 0.5 0.7]

The question sets are ``bench/questions/sample_factoid.jsonl`` (the bundled ``data/input``) and
``bench/questions/carol_factoid.jsonl`` (``../shared``'s *A Christmas Carol*): one JSON object a line,
``{"question": ..., "answers": [...]}``, each answer a short phrase taken verbatim from the text
(alternatives allowed: the cast list and the story often say the same thing differently).

Each corpus is indexed offline (``graphrag-assets index``, no model endpoint: the nlp method and the
offline embedder) into ``<workdir>/<corpus>`` unless an index is already there, then loaded once;
every question goes through :func:`graphrag_assets.query.engine.run_query` with no chat model,
exactly what ``graphrag-assets query --method local|basic`` prints. A question counts as answered
when one of its answers occurs (case-insensitive, whitespace collapsed) in the first three sentences
of the extractive answer. ``--text-unit-props`` asks local search once per given
``query.local.text_unit_prop`` (rows ``local@0.7``; the project's own setting otherwise). The script imports ``graphrag_assets`` from wherever Python finds it, so
an A/B against another checkout is ``PYTHONPATH=/path/to/checkout python bench/bench_extractive.py
--workdir <other dir> --label base`` (the index is built by that checkout's CLI, in that environment).

Results: printed as markdown and written to ``bench/results/extractive_<label>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_nlp import offline_env  # noqa: E402
from common import (  # noqa: E402
    REPO_ROOT,
    cli_command,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    write_results,
)

import graphrag_assets  # noqa: E402
from graphrag_assets.core.settings import load_settings  # noqa: E402
from graphrag_assets.core.tokens import token_counter  # noqa: E402
from graphrag_assets.llm.factory import build_embedding_model  # noqa: E402
from graphrag_assets.llm.usage import UsageMeter  # noqa: E402
from graphrag_assets.project.query_data import load_query_data  # noqa: E402
from graphrag_assets.query.engine import run_query  # noqa: E402
from graphrag_assets.query.request import QueryOptions, SearchRequest  # noqa: E402
from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "questions"
CORPORA: dict[str, tuple[Path, Path]] = {  # corpus -> (input file or folder, question set)
    "sample": (REPO_ROOT / "data" / "input", QUESTIONS / "sample_factoid.jsonl"),
    "carol": (CHRISTMAS_CAROL, QUESTIONS / "carol_factoid.jsonl"),
}
FIRST = 3
_CITATION = re.compile(r"\s*\[Data:[^\]]*\]")


def normalized(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split()).lower()


def answer_sentences(answer: str) -> list[str]:
    """The quoted sentences of an extractive answer (its notice line and citations dropped)."""
    blocks = [b.strip() for b in answer.split("\n\n")[1:]]
    return [_CITATION.sub("", b) for b in blocks if b]


def ensure_index(corpus: str, root: Path) -> None:
    if (root / "data" / "graphrag.duckdb").exists():
        return
    source, _ = CORPORA[corpus]
    if root.exists():
        shutil.rmtree(root)
    target = root / "data" / "input"
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("archive"))
    else:
        target.mkdir(parents=True)
        shutil.copy2(source, target / source.name)
    print(f"indexing {corpus} into {root} ...", file=sys.stderr, flush=True)
    subprocess.run(cli_command("index", "--root", str(root)), env=offline_env(), check=True, capture_output=True)


def method_variants(methods: list[str], text_unit_props: list[float]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Row name -> (query method, query.local settings that differ from the project's)."""
    variants: dict[str, tuple[str, dict[str, Any]]] = {}
    for method in methods:
        if method == "local" and text_unit_props:
            variants.update({f"local@{p:g}": ("local", {"text_unit_prop": p}) for p in text_unit_props})
        else:
            variants[method] = (method, {})
    return variants


async def ask_all(
    root: Path, questions: list[dict[str, Any]], variants: dict[str, tuple[str, dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    settings = load_settings(root, environ=offline_env())
    configured = {
        name: settings.query.model_copy(
            update={"local": settings.query.local.model_copy(update=local)} if local else {}
        )
        for name, (_, local) in variants.items()
    }
    data = load_query_data(settings)
    embedder = build_embedding_model(settings.llm, settings.embeddings, settings.database_path, UsageMeter())
    count = token_counter(settings.chunking.encoding)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for q in questions:
        for name, (method, _) in variants.items():
            request = SearchRequest(
                q["question"],
                data,
                configured[name],
                embedder=embedder,
                options=QueryOptions(method=method),
                count=count,
            )
            started = time.perf_counter()
            result = await run_query(request)
            seconds = time.perf_counter() - started
            first = answer_sentences(result.answer)[:FIRST]
            found = normalized(" ".join(first))
            hit = any(normalized(a) in found for a in q["answers"])
            rows[name].append({"question": q["question"], "hit": hit, "ms": round(seconds * 1000, 1), "first": first})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "graphrag-bench" / "extractive")
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--methods", nargs="+", default=["local", "basic"], choices=["local", "basic"])
    parser.add_argument(
        "--text-unit-props", nargs="+", type=float, default=[], help="local search once per query.local.text_unit_prop"
    )
    parser.add_argument("--label", default="current", help="names the results file (e.g. base, current)")
    parser.add_argument("--show-misses", action="store_true", help="print the first sentences of every miss")
    args = parser.parse_args()

    results: dict[str, Any] = {
        **machine_info(),
        "command": invocation(),
        "code": str(Path(graphrag_assets.__file__).resolve().parent.parent),
        "label": args.label,
        "load_average_start": load_average(),
        "first_sentences": FIRST,
        "corpora": {},
    }
    table = []
    for corpus in args.corpora:
        source, question_file = CORPORA[corpus]
        if not source.exists():
            print(f"{corpus}: data not available ({source}); skipped.", file=sys.stderr)
            continue
        questions = [json.loads(line) for line in question_file.read_text(encoding="utf-8").splitlines() if line]
        root = args.workdir / corpus
        ensure_index(corpus, root)
        rows = asyncio.run(ask_all(root, questions, method_variants(args.methods, args.text_unit_props)))
        results["corpora"][corpus] = {}
        for method, answered in rows.items():
            share = sum(r["hit"] for r in answered) / len(answered)
            results["corpora"][corpus][method] = {"questions": len(answered), "answered": share, "rows": answered}
            median_ms = sorted(r["ms"] for r in answered)[len(answered) // 2]
            table.append([corpus, method, len(answered), f"{share * 100:.1f}%", median_ms])
            if args.show_misses:
                for r in answered:
                    if not r["hit"]:
                        print(f"MISS [{corpus}/{method}] {r['question']}\n   " + "\n   ".join(r["first"]) + "\n")
    results["load_average_end"] = load_average()
    print(f"extractive answers ({args.label}: {results['code']}) — answer within the first {FIRST} sentences")
    print(f"load average at start {results['load_average_start']}, at end {results['load_average_end']}\n")
    print(markdown_table(["corpus", "method", "questions", "answered", "median ms"], table))
    path = write_results(f"extractive_{args.label}.json", results)
    print(f"\nwritten to {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
