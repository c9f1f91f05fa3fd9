"""What the offline embedders cost on a large corpus: embed-only timing of the scale corpus.

    python bench/bench_embedders.py [--documents 10000] [--embedders wordllama hashing]

The texts are those an offline index embeds, from ``scale_corpus`` (the corpus of
``bench_scale.py``): every document is one text unit (1-3 KB, under the 1,200-token chunk size),
and every distinct sentence naming a person or place stands for an entity description (the nlp
graph describes an entity by the sentences that name it). Each embedder runs in a fresh process
(``--one``), which reports its wall time, CPU time and peak RSS for: building the embedder, the
text units, then the descriptions, all in one call each, as the pipeline's assets do. Compare the
times with the 10,000-document offline index (``bench_scale.py --sizes 10000``, 88 s in
docs/SCALING.md): embedding must not dominate it.

Results: printed as markdown and written to ``bench/results/embedders.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import invocation, load_average, machine_info, markdown_table, write_results  # noqa: E402
from scale_corpus import jsonl_rows  # noqa: E402

_SENTENCE = re.compile(r"[^.!?]+[.!?]")
_NAMED = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+")


def corpus_texts(documents: int) -> tuple[list[str], list[str]]:
    """(text units, description-like sentences) of the first ``documents`` scale documents."""
    units = [row["text"] for row in jsonl_rows(documents)]
    descriptions = list(dict.fromkeys(s.strip() for text in units for s in _SENTENCE.findall(text) if _NAMED.search(s)))
    return units, descriptions


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(embedder_name: str, documents: int) -> dict[str, float | int | str]:
    """Time one embedder in this process (``--one``): the figures as a dict."""
    units, descriptions = corpus_texts(documents)
    from graphrag_assets.core.settings import EmbeddingSettings, LLMSettings
    from graphrag_assets.llm.factory import build_embedding_model
    from graphrag_assets.llm.usage import UsageMeter

    baseline = peak_mb()
    started, cpu = time.perf_counter(), time.process_time()
    model = build_embedding_model(
        LLMSettings(embeddings="local"), EmbeddingSettings(local_model=embedder_name), None, UsageMeter()
    )
    built = time.perf_counter() - started
    figures: dict[str, float | int | str] = {"model": model.model, "build_s": round(built, 3)}
    for name, texts in (("text_units", units), ("descriptions", descriptions)):
        started, cpu_started = time.perf_counter(), time.process_time()
        vectors = model.embed_sync(texts)
        figures[f"{name}_s"] = round(time.perf_counter() - started, 2)
        figures[f"{name}_cpu_s"] = round(time.process_time() - cpu_started, 2)
        figures[f"{name}_count"] = len(texts)
        figures["dimension"] = int(vectors.shape[1])
    figures["cpu_s"] = round(time.process_time() - cpu, 2)
    figures["peak_rss_mb"] = round(peak_mb(), 1)
    figures["rss_over_texts_mb"] = round(peak_mb() - baseline, 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--embedders", nargs="+", default=["wordllama", "hashing"], choices=["wordllama", "hashing"])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.documents)))
        return
    info, load_start = machine_info(), load_average()
    rows, runs = [], {}
    for name in args.embedders:
        done = subprocess.run(
            [sys.executable, __file__, "--one", name, "--documents", str(args.documents)],
            capture_output=True,
            text=True,
            check=True,
        )
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        runs[name] = figures
        rows.append(
            [
                figures["model"],
                f"{figures['text_units_count']:,}",
                f"{figures['text_units_s']} ({figures['text_units_cpu_s']})",
                f"{figures['descriptions_count']:,}",
                f"{figures['descriptions_s']} ({figures['descriptions_cpu_s']})",
                figures["cpu_s"],
                figures["peak_rss_mb"],
            ]
        )
    print(f"offline embedders on {args.documents:,} scale documents (load {load_start} -> {load_average()})\n")
    print(
        markdown_table(
            [
                "embedder",
                "text units",
                "s (CPU s)",
                "descriptions",
                "s (CPU s)",
                "CPU s in all",
                "peak RSS MB (process)",
            ],
            rows,
        )
    )
    results = {**info, "command": invocation(), "documents": args.documents, "runs": runs}
    results["load_average_start"], results["load_average_end"] = load_start, load_average()
    print(f"\nwritten to {write_results('embedders.json', results)}")


if __name__ == "__main__":
    main()
