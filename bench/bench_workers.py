"""Document steps on 2 workers vs 1, against a model endpoint with a latency (issue 34's target).

The standard method indexes generated documents (``scale_corpus.py``) through the scripted model
server at ``--latency-ms`` (200 ms: a hosted model's answer time), once in one process
(``workers.count: 1``) and once on 2 workers (``index --workers 2``) on the engine chosen with
``--engine`` (``dask``: a dask.distributed scheduler and two workers on loopback, started and
stopped here; ``multiprocess``: Dagster's multiprocess executor), both at the same *total*
``llm.concurrency``. Printed, with the load average:

- the most requests the server had in flight at once (it counts them): the endpoint's limit must
  hold across workers, so this is at most ``--concurrency`` in both runs;
- the wall of each ``index`` and of its document phase (the document job's Dagster run), and the
  ratio 2 workers / 1 worker (target: within 1.1: with a model endpoint as the bottleneck, the same
  total concurrency cannot go faster, and distributing the steps must cost little).

    python bench/bench_workers.py [--documents 1000] [--latency-ms 200] [--concurrency 16] [--engine dask]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    STANDIN_API_KEY,
    StandInServer,
    header_block,
    index_run,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    product_env,
    results_name,
    write_results,
)
from scale_corpus import write_text_corpus  # noqa: E402

from graphrag_assets_testkit.dask_cluster import DaskCluster, start_dask_cluster
from graphrag_assets_testkit.projects import make_project


def settings_yaml(base_url: str, concurrency: int, workers: str) -> str:
    return (
        "method: standard\n"
        "llm:\n"
        f"  base_url: {base_url}\n"
        f"  api_key: {STANDIN_API_KEY}\n"
        "  embeddings: openai\n"
        f"  concurrency: {concurrency}\n" + workers
    )


def workers_yaml(engine: str, cluster: DaskCluster | None) -> str:
    if engine == "dask":
        assert cluster is not None
        return f"workers:\n  engine: dask\n  dask_scheduler: {cluster.address}\n"
    return "workers:\n  engine: multiprocess\n"


def document_phase_seconds(root: Path) -> float:
    """Wall of the project's Dagster runs that are not the corpus job's: the document steps, however they ran."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.partitions import CORPUS_JOB
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(root, environ={}))
    try:
        stats = [instance.get_run_stats(run.run_id) for run in instance.get_runs() if run.job_name != CORPUS_JOB]
    finally:
        instance.dispose()
    return round(sum(s.end_time - s.start_time for s in stats if s.start_time and s.end_time), 3)


def measure_variant(server: StandInServer, root: Path, workers: int) -> dict[str, Any]:
    """One cold ``index`` with ``workers`` workers; its figures and what the server saw."""
    result = index_run(server, root, product_env(server), "--workers", str(workers), with_calls=False)
    result["document_phase_s"] = document_phase_seconds(root)
    result["load_after"] = load_average()
    return result


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    corpus = workdir / "corpus"
    corpus_bytes = write_text_corpus(corpus, args.documents)
    cluster = start_dask_cluster(workers=2) if args.engine == "dask" else None
    try:
        with StandInServer(workdir, latency_ms=args.latency_ms) as server:
            results = {}
            for workers in (1, 2):
                root = make_project(workdir / f"workers-{workers}", with_sample=False)
                shutil.rmtree(root / "data" / "input")
                shutil.copytree(corpus, root / "data" / "input")
                (root / "graphrag.yaml").write_text(
                    settings_yaml(server.base_url, args.concurrency, workers_yaml(args.engine, cluster)),
                    encoding="utf-8",
                )
                results[workers] = measure_variant(server, root, workers)
                print(f"{workers} worker(s): {results[workers]['wall_s']:.1f} s", file=sys.stderr, flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
    return {"corpus_bytes": corpus_bytes, "runs": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=16, help="total llm.concurrency, shared by the workers")
    parser.add_argument("--engine", choices=("dask", "multiprocess"), default="dask")
    parser.add_argument("--results", type=results_name, default="workers.json", help="file under bench/results/, or -")
    args = parser.parse_args()

    machine, load_start = machine_info(), load_average()
    with tempfile.TemporaryDirectory(prefix="bench_workers_") as tmp:
        measured = run(args, Path(tmp))
    load_end = load_average()
    one, two = measured["runs"][1], measured["runs"][2]
    rows = [
        [
            f"{n} worker(s)",
            r["wall_s"],
            r["document_phase_s"],
            r["server"]["max_in_flight"],
            r["server"]["chat"],
            r["server"]["embeddings"],
            " / ".join(f"{x:.2f}" for x in r["load_after"]),
        ]
        for n, r in ((1, one), (2, two))
    ]
    print(header_block(f"Workers: {args.engine} engine", invocation(), load_start, load_end, machine))
    print(
        f"\n{args.documents} documents ({measured['corpus_bytes'] / 1e6:.1f} MB), standard method, "
        f"server latency {args.latency_ms:.0f} ms, total llm.concurrency {args.concurrency}\n"
    )
    print(
        markdown_table(
            ["run", "index wall s", "document phase s", "max in flight", "chat calls", "embedding calls", "load after"],
            rows,
        )
    )
    ratio = two["wall_s"] / one["wall_s"]
    document_ratio = two["document_phase_s"] / one["document_phase_s"]
    within = max(r["server"]["max_in_flight"] for r in (one, two)) <= args.concurrency
    print(
        f"\nwall 2 workers / 1 worker: {ratio:.2f} (document phase {document_ratio:.2f}; target <= 1.10); "
        f"max in flight <= concurrency: {within}"
    )
    if args.results != "-":
        path = write_results(
            args.results,
            {
                "machine": machine,
                "load_start": load_start,
                "load_end": load_end,
                "arguments": vars(args),
                "ratio": round(ratio, 3),
                "document_phase_ratio": round(document_ratio, 3),
                **measured,
            },
        )
        print(f"results: {path}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
