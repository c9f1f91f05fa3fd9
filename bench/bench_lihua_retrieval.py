"""Retrieval quality of local and basic search on LiHua-World (nlp index, no LLM).

    python bench/bench_lihua_retrieval.py [--embedder wordllama|hashing] [--project DIR] [--variants ...]
        [--context-only] [--results NAME.json]

Variants (``--variants``, all by default): ``basic-vector`` and ``basic-hybrid`` (``query.basic.mode``),
``local-msgraphrag`` and ``local-graph`` (``query.local.ranking``), ``local-graph-text50`` and
``local-graph-text60`` (the graph ranking with ``text_unit_prop`` 0.5, Microsoft's share, and 0.6 instead of the
default 0.7); every other setting is the default.

The question set is ``qa/query_set.json`` of MiniRAG's LiHua-World (637 questions, types
Single / Multi / Null). Its ``evidence`` field names the chat log(s) holding the answer by their
timestamp, several joined with ``<and>`` (``20260121_10:00<and>20260701_10:00``); a few items are
written ``Time: 20260930_16:00`` or without the colon (``20260426_1330``). Every chat log starts with a ``Time: <timestamp>`` line, so the
timestamp maps to a file through that line (the file name is usually the timestamp without the
colon, but the ``bakery_deliver`` logs are named by date only). Questions without usable evidence
are left out and listed: the ``Null`` questions (evidence ``N/A``, answer "Insufficient
information") and any whose evidence names no file (one has the evidence ``What``).

The index is the nlp-method project of ``bench/bench_nlp.py`` (built here when missing). It is
loaded once (:func:`graphrag_assets.project.query_data.load_query_data`, LanceDB vector and
full-text indexes) and every question goes through :func:`graphrag_assets.query.engine.run_query`
with ``chat_model=None`` and the project's offline embedder (``--embedder``: the bundled static model,
the default, or feature hashing; each in its own project), exactly what
``graphrag-assets query --method local|basic`` does per question, minus the process start-up.
The variants take turns on every question, so load from other processes spreads evenly over them.

For each answer the sources (text units) of its context, in the order returned, are mapped to
their documents (``text_units.document_id`` → ``documents.path``); the first 10 distinct
documents are the retrieved set. hit@10 (any) = share of questions with at least one gold file
among them; hit@10 (all) = share with every gold file among them. Also shown: hit@1 and hit@5
(any), how many distinct documents a method returns, and two times per question: building the
context (question embedding, retrieval and ranking, the context tables: ``build_basic_context`` /
``build_local_context``, what a model call would wait for) and the whole no-LLM ``run_query`` (the
extractive answer included). The first question, which opens LanceDB and builds the ranking
graph, is reported apart.

Results: printed as markdown and written to ``bench/results/lihua_retrieval.json`` (hashing:
``lihua_retrieval_hashing.json``; ``--results``: another name, e.g. for a project indexed with other
settings). The file records the index's relationship count and the pruning settings the project
has when the benchmark runs (this code's defaults for what its graphrag.yaml leaves out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_nlp import (  # noqa: E402
    DEFAULT_WORKDIR,
    LIHUA_QA,
    LIHUA_ZIP,
    corpus_files,
    offline_env,
    percentile,
    prepare_project,
)
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

from graphrag_assets.core.settings import QuerySettings, load_settings  # noqa: E402
from graphrag_assets.core.tokens import token_counter  # noqa: E402
from graphrag_assets.llm.factory import build_embedding_model  # noqa: E402
from graphrag_assets.llm.usage import UsageMeter  # noqa: E402
from graphrag_assets.project.query_data import load_query_data  # noqa: E402
from graphrag_assets.query.basic_search import build_basic_context  # noqa: E402
from graphrag_assets.query.engine import run_query  # noqa: E402
from graphrag_assets.query.local_search import build_local_context  # noqa: E402
from graphrag_assets.query.query_data import QueryData  # noqa: E402
from graphrag_assets.query.request import QueryOptions, SearchRequest  # noqa: E402

TOP = 10
EMBEDDERS = ("wordllama", "hashing", "combined")  # embeddings.local_model; the first is the product's default
CUTOFFS = (1, 5, 10)
# variant -> (query method, query settings that differ from the defaults)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "basic-vector": ("basic", {"basic": {"mode": "vector"}}),
    "basic-hybrid": ("basic", {"basic": {"mode": "hybrid"}}),
    "local-msgraphrag": ("local", {"local": {"ranking": "msgraphrag"}}),
    "local-graph": ("local", {"local": {"ranking": "graph"}}),
    # the graph ranking with less of the context for its Sources table than the default 70%: the walk ranks
    # as well as hybrid search at 5 documents, but half a context holds fewer than 10 chat logs
    "local-graph-text50": ("local", {"local": {"ranking": "graph", "text_unit_prop": 0.5}}),
    "local-graph-text60": ("local", {"local": {"ranking": "graph", "text_unit_prop": 0.6}}),
}


# --- gold evidence ------------------------------------------------------------------------------------


def normalize_stamp(text: str) -> str:
    """``Time: 20260121_10:00``, ``20260121_10:00`` and ``20260121_1000`` all become ``20260121_1000``."""
    return text.strip().removeprefix("Time:").strip().replace(":", "")


def timestamp_index(input_dir: Path) -> dict[str, str]:
    """Normalized chat-log timestamp (its ``Time:`` line) → file path relative to the input folder."""
    index: dict[str, str] = {}
    for path in sorted(input_dir.rglob("*.txt")):
        with path.open(encoding="utf-8") as handle:
            first = handle.readline().strip()
        if first.startswith("Time:"):
            index.setdefault(normalize_stamp(first), path.relative_to(input_dir).as_posix())
    return index


def gold_files(evidence: str, by_timestamp: dict[str, str]) -> list[str] | None:
    """The files an evidence string names, or None when an item names no file."""
    files = []
    for item in evidence.split("<and>"):
        stamp = normalize_stamp(item)
        if stamp not in by_timestamp:
            return None
        files.append(by_timestamp[stamp])
    return list(dict.fromkeys(files))


def scored_questions(
    qa: dict[str, dict[str, str]], by_timestamp: dict[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(questions with gold files, excluded questions with the reason)."""
    kept, excluded = [], []
    for key in sorted(qa, key=int):
        item = qa[key]
        evidence = item["evidence"].strip()
        if evidence.upper() == "N/A":
            excluded.append({"id": key, "type": item["type"], "reason": "no evidence (N/A)"})
            continue
        gold = gold_files(evidence, by_timestamp)
        if gold is None:
            excluded.append({"id": key, "type": item["type"], "reason": f"evidence {evidence!r} names no chat log"})
            continue
        kept.append({"id": key, "type": item["type"], "question": item["question"], "gold": gold})
    return kept, excluded


# --- retrieval ----------------------------------------------------------------------------------------


def retrieved_documents(source_ids: Sequence[str], unit_document: dict[str, str]) -> list[str]:
    """Distinct documents of the sources, in the order of their first source."""
    return list(dict.fromkeys(unit_document[i] for i in source_ids if i in unit_document))


def gold_ranks(documents: Sequence[str], gold: Sequence[str]) -> list[int | None]:
    """1-based rank of each gold file among the retrieved documents (None when absent)."""
    position = {d: i + 1 for i, d in enumerate(documents)}
    return [position.get(g) for g in gold]


def variant_settings(base: QuerySettings, variant: str) -> QuerySettings:
    """``base`` with the variant's settings (each setting a variant names replaces the base's)."""
    merged = base.model_dump(by_alias=True)
    for section, values in VARIANTS[variant][1].items():
        merged[section] = {**merged[section], **values}
    return QuerySettings.model_validate(merged)


async def context_sources(
    method: str, question: str, data: QueryData, embedder, settings: QuerySettings, encoding: str
) -> list[str]:
    """The source ids of the context the method builds (everything before the model call)."""
    request = SearchRequest(question, data, settings, embedder=embedder, count=token_counter(encoding))
    calls = request.model_calls()
    if method == "local":
        context = await build_local_context(request, calls, settings.local)
        return context.records.ids("sources")
    basic = build_basic_context(question, await calls.embed(question, "query_basic"), data, settings.basic, calls.count)
    return basic.records.ids("sources")


async def run_variants(
    variants: Sequence[str],
    questions: list[dict[str, Any]],
    data: QueryData,
    embedder,
    settings,
    unit_document: dict[str, str],
    context_only: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """Per variant, one row per question: timings and the rank of each gold file (``context_only``:
    from the context alone, without the no-LLM answer, whose sources are the context's)."""
    configured = {v: variant_settings(settings.query, v) for v in variants}
    encoding = settings.chunking.encoding
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for q in questions:
        for variant in variants:
            method, query_settings = VARIANTS[variant][0], configured[variant]
            started = time.perf_counter()
            sources = await context_sources(method, q["question"], data, embedder, query_settings, encoding)
            context_seconds = time.perf_counter() - started
            if context_only:
                documents = retrieved_documents(sources, unit_document)
                rows[variant].append(
                    {
                        "id": q["id"],
                        "context_seconds": context_seconds,
                        "seconds": context_seconds,
                        "sources": len(sources),
                        "documents": len(documents),
                        "gold_ranks": gold_ranks(documents, q["gold"]),
                    }
                )
                continue
            started = time.perf_counter()
            request = SearchRequest(
                q["question"],
                data,
                query_settings,
                embedder=embedder,
                options=QueryOptions(method=method),
                count=token_counter(encoding),
            )
            result = await run_query(request)
            seconds = time.perf_counter() - started
            documents = retrieved_documents(result.context_records.ids("sources"), unit_document)
            rows[variant].append(
                {
                    "id": q["id"],
                    "context_seconds": context_seconds,
                    "seconds": seconds,
                    "sources": len(result.context_records.sources),
                    "documents": len(documents),
                    "gold_ranks": gold_ranks(documents, q["gold"]),
                }
            )
    return rows


# --- summary ------------------------------------------------------------------------------------------


def hit(ranks: Sequence[int | None], k: int, *, every: bool) -> bool:
    inside = [r is not None and r <= k for r in ranks]
    return all(inside) if every else any(inside)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    summary: dict[str, Any] = {"questions": n}
    for k in CUTOFFS:
        summary[f"hit@{k}_any"] = round(sum(hit(r["gold_ranks"], k, every=False) for r in rows) / n, 4) if n else None
    summary[f"hit@{TOP}_all"] = round(sum(hit(r["gold_ranks"], TOP, every=True) for r in rows) / n, 4) if n else None
    if n and all("documents" in r for r in rows):
        summary["mean_documents"] = round(statistics.fmean(min(r["documents"], TOP) for r in rows), 2)
        summary["mean_documents_uncapped"] = round(statistics.fmean(r["documents"] for r in rows), 2)
    return summary


def timing(rows: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["seconds"] for r in rows]
    context = [r["context_seconds"] for r in rows]
    rest, context_rest = seconds[1:] or seconds, context[1:] or context
    return {
        "context_first_ms": round(context[0] * 1000, 1),
        "context_median_ms": round(statistics.median(context_rest) * 1000, 1),
        "context_p95_ms": round(percentile(context_rest, 95) * 1000, 1),
        "first_ms": round(seconds[0] * 1000, 1),
        "median_ms": round(statistics.median(rest) * 1000, 1),
        "p95_ms": round(percentile(rest, 95) * 1000, 1),
        "mean_ms": round(statistics.fmean(rest) * 1000, 1),
        "total_s": round(sum(seconds), 1),
    }


def by_type(rows: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary over all questions and per question type."""
    kinds = sorted({q["type"] for q in questions})
    out = {"all": summarize(rows)}
    for kind in kinds:
        ids = {q["id"] for q in questions if q["type"] == kind}
        out[kind] = summarize([r for r in rows if r["id"] in ids])
    return out


def either(per_method: dict[str, list[dict[str, Any]]], questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per question, each gold file's best rank over the methods (found by one of them)."""
    return [
        {
            "id": q["id"],
            "gold_ranks": [
                min((r for r in ranks if r is not None), default=None)
                for ranks in zip(*(rows[i]["gold_ranks"] for rows in per_method.values()))
            ],
        }
        for i, q in enumerate(questions)
    ]


def write_embedder_choice(project: Path, embedder: str) -> None:
    """Pin the offline embedder in the project's graphrag.yaml (the default needs no line)."""
    if embedder != EMBEDDERS[0]:
        (project / "graphrag.yaml").write_text(f"embeddings:\n  local_model: {embedder}\n", encoding="utf-8")


def ensure_project(project: Path, embedder: str) -> None:
    if (project / "data" / "graphrag.duckdb").exists():
        return
    print(f"no index at {project}; building it (nlp method, {embedder} embedder) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-lihua-") as scratch:
        found = corpus_files("lihua", Path(scratch))
        assert found is not None
        prepare_project(project, *found)
        write_embedder_choice(project, embedder)
        subprocess.run(cli_command("index", "--root", str(project)), env=offline_env(), check=True)


def percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.1f}%"


def print_report(r: dict[str, Any]) -> None:
    index, questions, summary = r["index"], r["questions"], r["summary"]
    print(
        header_block(
            "LiHua-World retrieval (nlp index, no LLM)", r["command"], r["load_average_start"], r["load_average_end"], r
        )
    )
    print()
    listed = "; ".join(f"{e['id']} ({e['type']}): {e['reason']}" for e in r["excluded"] if "N/A" not in e["reason"])
    print(
        f"index: `{r['project']}` (embedder {r.get('embedder', '?')}) — {index['documents']} documents, {index['text_units']} text units, "
        f"{index['entities']} entities; loaded in {index['load_seconds']:.2f} s. Questions scored: {questions['scored']} "
        f"({', '.join(f'{k} {v}' for k, v in questions['by_type'].items())}); excluded: {len(r['excluded'])} — "
        f"{questions['without_evidence']} without evidence (N/A); {listed}.\n"
    )
    rows = []
    for method, parts in summary.items():
        for kind, s in parts.items():
            if kind == "timing":
                continue
            rows.append(
                [
                    method,
                    kind,
                    s["questions"],
                    percent(s[f"hit@{TOP}_any"]),
                    percent(s[f"hit@{TOP}_all"]),
                    percent(s["hit@1_any"]),
                    percent(s["hit@5_any"]),
                    s.get("mean_documents", ""),
                    s.get("mean_documents_uncapped", ""),
                ]
            )
    print(
        markdown_table(
            [
                "method",
                "questions",
                "n",
                "hit@10 any",
                "hit@10 all",
                "hit@1 any",
                "hit@5 any",
                "docs in top 10 (mean)",
                "docs returned (mean)",
            ],
            rows,
        )
    )
    print("\n(either = a gold file counts as found when one of the variants has it in its top 10)\n")
    keys = ("context_first_ms", "context_median_ms", "context_p95_ms", "first_ms", "median_ms", "p95_ms", "total_s")
    print(
        markdown_table(
            [
                "variant",
                "context: first question ms",
                "context: median ms",
                "context: p95 ms",
                "no-LLM query: first ms",
                "no-LLM query: median ms",
                "no-LLM query: p95 ms",
                "total s",
            ],
            [[m, *(parts["timing"][k] for k in keys)] for m, parts in summary.items() if "timing" in parts],
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=None, help="nlp-indexed LiHua project (default: per embedder)")
    parser.add_argument(
        "--embedder", default=EMBEDDERS[0], choices=EMBEDDERS, help="offline embedder of a project built here"
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--limit", type=int, default=None, help="first N scored questions only (for a quick try)")
    parser.add_argument(
        "--context-only", action="store_true", help="build the contexts only (same hits; no answer, no query times)"
    )
    parser.add_argument("--results", default=None, help="result file name in bench/results (default: by embedder)")
    args = parser.parse_args()

    if not (LIHUA_ZIP.exists() and LIHUA_QA.exists()):
        print(f"LiHua-World data not available ({LIHUA_ZIP.parent.parent}); skipped.")
        return
    info, command, load_start = machine_info(), invocation(), load_average()
    args.project = args.project or DEFAULT_WORKDIR / f"lihua-{args.embedder}"
    ensure_project(args.project, args.embedder)

    settings = load_settings(args.project, environ=offline_env())
    qa = json.loads(LIHUA_QA.read_text(encoding="utf-8"))
    questions, excluded = scored_questions(qa, timestamp_index(settings.input_dir))
    questions = questions[: args.limit] if args.limit else questions

    started = time.perf_counter()
    data = load_query_data(settings)
    load_seconds = time.perf_counter() - started
    paths = dict(data.documents.select("id", "path").iter_rows())
    unit_document = {u: paths[d] for u, d in data.text_units.select("id", "document_id").iter_rows() if d in paths}
    if data.text_unit_lexical is None:
        print(
            f"warning: {args.project} has no full-text index (indexed by an older version); hybrid variants fall "
            f"back to vectors. Run 'graphrag-assets index --root {args.project}' first.",
            file=sys.stderr,
        )
    embedder = build_embedding_model(settings.llm, settings.embeddings, settings.database_path, UsageMeter())

    print(f"{', '.join(args.variants)} over {len(questions)} questions ...", file=sys.stderr, flush=True)
    per_method = asyncio.run(
        run_variants(args.variants, questions, data, embedder, settings, unit_document, args.context_only)
    )
    summary = {method: {**by_type(rows, questions), "timing": timing(rows)} for method, rows in per_method.items()}
    if len(per_method) > 1:
        summary["either"] = by_type(either(per_method, questions), questions)

    results = {
        **info,
        "command": command,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "project": str(args.project),
        "embedder": embedder.model,
        "index": {
            "documents": data.documents.height,
            "text_units": data.text_units.height,
            "full_text_index": data.text_unit_lexical is not None,
            "entities": data.entities.height,
            "relationships": data.row_count("relationships"),
            "prune": settings.nlp.prune.model_dump(),
            "load_seconds": round(load_seconds, 2),
        },
        "questions": {
            "scored": len(questions),
            "by_type": dict(sorted(Counter(q["type"] for q in questions).items())),
            "without_evidence": sum("N/A" in e["reason"] for e in excluded),
        },
        "top": TOP,
        "summary": summary,
        "excluded": excluded,
        # One line per question: id, ms, sources, distinct documents, rank of each gold file (None: not returned).
        "per_question": {
            m: [
                f"{r['id']} context={r['context_seconds'] * 1000:.1f}ms query={r['seconds'] * 1000:.1f}ms "
                f"sources={r['sources']} documents={r['documents']} "
                f"gold_ranks={r['gold_ranks']}"
                for r in rows
            ]
            for m, rows in per_method.items()
        },
    }
    print_report(results)
    suffix = "" if args.embedder == EMBEDDERS[0] else f"_{args.embedder}"
    path = write_results(args.results or f"lihua_retrieval{suffix}.json", results)
    print(f"\nwritten to {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
