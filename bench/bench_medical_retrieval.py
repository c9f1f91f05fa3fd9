"""Retrieval of basic and local search on GraphRAG-Bench's medical corpus (nlp index, no LLM), by a proxy.

    python bench/bench_medical_retrieval.py [--embedder wordllama|hashing] [--project DIR] [--limit N]

Data: ``GraphRAG-Benchmark/Datas/Corpus/medical.json`` (one text of ~1 MB: NCCN-style guidance
on cancers and treatments) and ``Datas/Questions/medical_questions.json`` (2,062 questions with a
gold answer and a type: Fact Retrieval, Complex Reasoning, Contextual Summarize, Creative
Generation). The copy here has **no gold evidence passages**, so retrieval is scored by a proxy
computed from the gold answer:

- *answer-term recall@k*: the share of the answer's content words (lower-cased words that are
  not function words, as the offline embedder splits them) found in the first k sources of the
  context, averaged over the questions;
- *pseudo-evidence hit@k*: the pseudo-evidence of a question is the text unit (or the tied
  units) holding the most distinct answer content words; hit@k = a pseudo-evidence unit is among
  the first k sources. Questions whose best unit holds fewer than half of the answer's content
  words are not scored on it (no unit is a convincing evidence passage for them).

Both proxies are lexical, so they favour lexical retrieval (BM25 is part of the hybrid variants,
not of the vector ones) and they ignore paraphrase; they are a side-by-side of the variants on
another corpus, not a measure of answer quality. k = 5 is the main figure: local search's
Sources table (half of a 12,000-token context) holds about five 1,200-token text units, basic
search's about ten, so at k = 10 basic search has twice the room.

The project (``--project``, built here when missing) holds the corpus as one file and is indexed
with ``graphrag-assets index`` offline (nlp method; ``--embedder``: the bundled static model or hashing). The variants are those
of ``bench/bench_lihua_retrieval.py``; each builds the context for every question (the variants
taking turns per question) and its build time is recorded.

Results: printed as markdown and written to ``bench/results/medical_retrieval.json`` (hashing:
``medical_retrieval_hashing.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lihua_retrieval import (  # noqa: E402
    EMBEDDERS,
    VARIANTS,
    context_sources,
    percent,
    variant_settings,
    write_embedder_choice,
)
from bench_nlp import DEFAULT_WORKDIR, offline_env, percentile  # noqa: E402
from common import (  # noqa: E402
    REPO_ROOT,
    cli_command,
    header_block,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    write_results,
)

from graphrag_assets.core.settings import load_settings  # noqa: E402
from graphrag_assets.core.words import function_words  # noqa: E402
from graphrag_assets.llm.factory import build_embedding_model  # noqa: E402
from graphrag_assets.llm.local_embedder import words_of  # noqa: E402
from graphrag_assets.llm.usage import UsageMeter  # noqa: E402
from graphrag_assets.project.query_data import load_query_data  # noqa: E402
from graphrag_assets_testkit.shared_data import SHARED_DATA  # noqa: E402

MEDICAL_DIR = SHARED_DATA / "GraphRAG-Benchmark" / "Datas"
CORPUS = MEDICAL_DIR / "Corpus" / "medical.json"
QUESTIONS = MEDICAL_DIR / "Questions" / "medical_questions.json"
CUTOFFS = (5, 10)
MIN_EVIDENCE_COVERAGE = 0.5


def content_words(text: str) -> set[str]:
    stop = function_words()
    return {w for w in words_of(text) if w not in stop and not w.isdigit()}


def ensure_project(project: Path, embedder: str) -> None:
    """A project holding the medical corpus as one text file, indexed offline (built when missing)."""
    if (project / "data" / "graphrag.duckdb").exists():
        return
    print(f"indexing the medical corpus into {project} (nlp method) ...", file=sys.stderr, flush=True)
    target = project / "data" / "input" / "medical.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    (corpus,) = json.loads(CORPUS.read_text(encoding="utf-8"))
    target.write_text(corpus["context"], encoding="utf-8")
    write_embedder_choice(project, embedder)
    subprocess.run(cli_command("index", "--root", str(project)), env=offline_env(), check=True)


def pseudo_evidence(answer_words: set[str], unit_words: dict[str, set[str]]) -> set[str]:
    """The units holding the most answer words, when they hold at least half of them."""
    if not answer_words:
        return set()
    coverage = {unit: len(answer_words & words) for unit, words in unit_words.items()}
    best = max(coverage.values(), default=0)
    if best < MIN_EVIDENCE_COVERAGE * len(answer_words):
        return set()
    return {unit for unit, covered in coverage.items() if covered == best}


def score(
    sources: list[str], answer_words: set[str], evidence: set[str], unit_words: dict[str, set[str]]
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for k in CUTOFFS:
        found = set().union(*(unit_words.get(u, set()) for u in sources[:k]))
        row[f"recall@{k}"] = len(answer_words & found) / len(answer_words) if answer_words else None
        row[f"hit@{k}"] = bool(evidence & set(sources[:k])) if evidence else None
    return row


async def run(
    variants: list[str], questions: list[dict[str, Any]], data, embedder, settings
) -> dict[str, list[dict[str, Any]]]:
    unit_words = {u: content_words(t) for u, t in data.text_units.select("id", "text").iter_rows()}
    configured = {v: variant_settings(settings.query, v) for v in variants}
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for q in questions:
        answer_words = content_words(q["answer"])
        evidence = pseudo_evidence(answer_words, unit_words)
        for variant in variants:
            started = time.perf_counter()
            sources = await context_sources(
                VARIANTS[variant][0], q["question"], data, embedder, configured[variant], settings.chunking.encoding
            )
            seconds = time.perf_counter() - started
            rows[variant].append(
                {
                    "type": q["question_type"],
                    "seconds": seconds,
                    "sources": len(sources),
                    **score(sources, answer_words, evidence, unit_words),
                }
            )
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(rows)}
    for k in CUTOFFS:
        recalls = [r[f"recall@{k}"] for r in rows if r[f"recall@{k}"] is not None]
        hits = [r[f"hit@{k}"] for r in rows if r[f"hit@{k}"] is not None]
        out[f"answer_recall@{k}"] = round(statistics.fmean(recalls), 4) if recalls else None
        out[f"evidence_hit@{k}"] = round(sum(hits) / len(hits), 4) if hits else None
        out["evidence_scored"] = len(hits)
    out["mean_sources"] = round(statistics.fmean(r["sources"] for r in rows), 2) if rows else None
    return out


def timing(rows: list[dict[str, Any]]) -> dict[str, float]:
    seconds = [r["seconds"] for r in rows]
    rest = seconds[1:] or seconds
    return {
        "first_ms": round(seconds[0] * 1000, 1),
        "median_ms": round(statistics.median(rest) * 1000, 1),
        "p95_ms": round(percentile(rest, 95) * 1000, 1),
    }


def print_report(r: dict[str, Any]) -> None:
    print(
        header_block(
            "GraphRAG-Bench medical retrieval (nlp index, no LLM; proxy scores)",
            r["command"],
            r["load_average_start"],
            r["load_average_end"],
            r,
        )
    )
    index = r["index"]
    print(
        f"\nindex: `{r['project']}` — {index['text_units']} text units, {index['entities']} entities, "
        f"{index['relationships']} relationships; questions: {r['questions']}.\n"
    )
    rows = []
    for variant, parts in r["summary"].items():
        for kind, s in parts.items():
            if kind == "timing":
                continue
            rows.append(
                [
                    variant,
                    kind,
                    s["questions"],
                    percent(s["answer_recall@5"]),
                    percent(s["evidence_hit@5"]),
                    percent(s["answer_recall@10"]),
                    percent(s["evidence_hit@10"]),
                    s["evidence_scored"],
                    s["mean_sources"],
                ]
            )
    print(
        markdown_table(
            [
                "variant",
                "questions",
                "n",
                "answer-term recall@5",
                "pseudo-evidence hit@5",
                "answer-term recall@10",
                "pseudo-evidence hit@10",
                "n with pseudo-evidence",
                "sources (mean)",
            ],
            rows,
        )
    )
    print()
    print(
        markdown_table(
            ["variant", "context: first question ms", "context: median ms", "context: p95 ms"],
            [
                [v, p["timing"]["first_ms"], p["timing"]["median_ms"], p["timing"]["p95_ms"]]
                for v, p in r["summary"].items()
            ],
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--project", type=Path, default=None, help="nlp-indexed medical project (default: per embedder)"
    )
    parser.add_argument(
        "--embedder", default=EMBEDDERS[0], choices=EMBEDDERS, help="offline embedder of a project built here"
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--limit", type=int, default=None, help="first N questions only (for a quick try)")
    args = parser.parse_args()
    if not (CORPUS.exists() and QUESTIONS.exists()):
        print(f"GraphRAG-Bench medical data not available ({MEDICAL_DIR}); skipped.")
        return
    info, command, load_start = machine_info(), invocation(), load_average()
    args.project = args.project or DEFAULT_WORKDIR / f"medical-{args.embedder}"
    ensure_project(args.project, args.embedder)
    settings = load_settings(args.project, environ=offline_env())
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))[: args.limit]
    data = load_query_data(settings)
    embedder = build_embedding_model(settings.llm, settings.embeddings, settings.database_path, UsageMeter())
    print(f"{', '.join(args.variants)} over {len(questions)} questions ...", file=sys.stderr, flush=True)
    rows = asyncio.run(run(args.variants, questions, data, embedder, settings))
    kinds = sorted(Counter(q["question_type"] for q in questions))
    summary = {
        variant: {
            "all": summarize(r),
            **{kind: summarize([x for x in r if x["type"] == kind]) for kind in kinds},
            "timing": timing(r),
        }
        for variant, r in rows.items()
    }
    results = {
        **info,
        "command": command,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "project": str(args.project),
        "embedder": embedder.model,
        "questions": len(questions),
        "index": {
            "text_units": data.text_units.height,
            "entities": data.entities.height,
            "relationships": data.relationships.height,
            "full_text_index": data.text_unit_lexical is not None,
        },
        "summary": summary,
    }
    print_report(results)
    suffix = "" if args.embedder == EMBEDDERS[0] else f"_{args.embedder}"
    path = write_results(f"medical_retrieval{suffix}.json", results)
    print(f"\nwritten to {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
