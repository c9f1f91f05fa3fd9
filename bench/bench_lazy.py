"""What lazy search costs against global search: model calls and tokens per question, and the
total of an index plus ten questions.

Two indexes of the same corpus are built against the scripted OpenAI-compatible server
(``graphrag_assets_testkit.graphrag_responder``; a scripted model cannot judge answers, so this
measures cost and behaviour only): a ``standard`` one (the model extracts, summarizes and writes
reports) and an ``nlp`` one (no model at index time). Then ten questions are asked with ``global``
on the standard index and ``lazy`` at each budget on the nlp index, through the CLI's own
function. Tokens are the prompt + completion tokens the server reports. The response cache is off,
so every budget pays its own tests (with it, a larger budget would reuse a smaller one's).

    python bench/bench_lazy.py                        # the bundled sample (data/input)
    python bench/bench_lazy.py --corpus carol         # A Christmas Carol from ../shared (skips when absent)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import load_average  # noqa: E402

QUESTIONS = REPO / "data" / "eval" / "sample_questions.jsonl"
CAROL_QUESTIONS = [
    "Who is Scrooge's late business partner?",
    "What does the Ghost of Christmas Past show Scrooge?",
    "Who is Tiny Tim?",
    "What happens at Fezziwig's party?",
    "Who is Scrooge's nephew?",
    "What does Scrooge see in the future?",
    "How does Scrooge change at the end?",
    "Who is Belle?",
    "What is the Cratchit family's Christmas dinner like?",
    "What chains does Marley wear?",
]


def corpus_folder(name: str) -> Path | None:
    """The input folder of ``name`` (Carol: the book from ../shared, copied into a folder of its own)."""
    if name == "sample":
        return REPO / "data" / "input"
    from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL

    if not CHRISTMAS_CAROL.is_file():
        return None
    folder = Path(tempfile.mkdtemp()) / "input"
    folder.mkdir(parents=True)
    shutil.copy(CHRISTMAS_CAROL, folder / "a_christmas_carol.txt")
    return folder


def project(root: Path, corpus: Path, base_url: str, method: str) -> Path:
    from graphrag_assets_testkit.projects import make_project

    make_project(root, with_sample=False)
    shutil.rmtree(root / "data" / "input")
    shutil.copytree(corpus, root / "data" / "input")
    (root / "graphrag.yaml").write_text(
        f"method: {method}\nllm:\n  base_url: {base_url}\n  api_key: sk-bench\n  embeddings: local\n  cache: false\n",
        encoding="utf-8",
    )
    return root


def usage_of(server, before: int) -> dict[str, int]:
    calls = server.calls("chat")[before:]
    tokens = sum(
        (c.get("usage") or {}).get("prompt_tokens", 0) + (c.get("usage") or {}).get("completion_tokens", 0)
        for c in calls
    )
    return {"calls": len(calls), "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["sample", "carol"], default="sample")
    parser.add_argument("--budgets", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    corpus = corpus_folder(args.corpus)
    if corpus is None:
        print("A Christmas Carol is not in ../shared/data; nothing measured.")
        return
    if args.corpus == "sample":
        questions = [json.loads(line)["question"] for line in QUESTIONS.read_text().splitlines()[:10]]
    else:
        questions = CAROL_QUESTIONS
    os.environ.pop("OPENAI_API_KEY", None)
    os.environ.pop("OPENAI_BASE_URL", None)
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.indexing import index_project
    from graphrag_assets.project.querying import answer_question
    from graphrag_assets.query.request import QueryOptions
    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    started = load_average()
    server = ScriptedOpenAIServer.start(responder="graphrag_assets_testkit.graphrag_responder:respond")
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            built = {}
            for method in ("standard", "nlp"):
                root = project(Path(tmp) / method, corpus, server.base_url, method)
                before = len(server.calls("chat"))
                index_project(load_settings(root))
                built[method] = (root, usage_of(server, before))
            plans = [("global", "standard", None)] + [("lazy", "nlp", budget) for budget in args.budgets]
            for query_method, index, budget in plans:
                root, index_usage = built[index]
                settings = load_settings(root)
                before = len(server.calls("chat"))
                tests = 0
                for question in questions:
                    result = answer_question(settings, question, QueryOptions(query_method, budget=budget))
                    tests += result.details.get("tests_spent", 0)
                asked = usage_of(server, before)
                rows.append(
                    {
                        "query": query_method + (f" (budget {budget})" if budget else ""),
                        "index": index,
                        "index_calls": index_usage["calls"],
                        "index_tokens": index_usage["tokens"],
                        "chunks_tested_per_question": tests / len(questions),
                        "calls_per_question": asked["calls"] / len(questions),
                        "tokens_per_question": asked["tokens"] / len(questions),
                        "total_tokens_index_plus_10": index_usage["tokens"] + asked["tokens"] * 10 / len(questions),
                    }
                )
    finally:
        server.stop()
    print(f"# lazy vs global on {args.corpus} (load average {started} -> {load_average()})")
    print(
        "| query | index | index calls | index tokens | chunks tested / question | calls / question "
        "| tokens / question | index + 10 questions, tokens |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['query']} | {r['index']} | {r['index_calls']} | {r['index_tokens']:,} | "
            f"{r['chunks_tested_per_question']:.1f} | {r['calls_per_question']:.1f} | "
            f"{r['tokens_per_question']:,.0f} | {r['total_tokens_index_plus_10']:,.0f} |"
        )
    if args.results:
        args.results.write_text(
            json.dumps({"corpus": args.corpus, "load": [started, load_average()], "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
