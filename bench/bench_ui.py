"""How fast the Dagster UI answers for an indexed project: the asset page of ``text_units``.

Starts Dagster's webserver (no daemon) on a project, the way ``graphrag-assets dev`` configures
it (``DAGSTER_HOME`` at the project root, its workspace.yaml), and times the GraphQL queries the
asset page sends for a partitioned asset: the asset node with its partition statuses and counts,
and the latest materializations with their metadata. Each query is timed cold (first request after
start-up) and warm (median of 5). Stops the webserver by its PID.

    python bench/bench_ui.py /tmp/bench_scale/offline_1000 /tmp/bench_scale/offline_10000

(projects kept by ``bench_scale.py --workdir DIR``). Writes bench/results/scale_ui.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import git_state, invocation, load_average, machine_info, markdown_table, results_name, write_results  # noqa: E402

START_SECONDS = 180
QUERIES = {
    "asset node and partition statuses": """
        query { assetNodes(assetKeys: [{path: ["text_units"]}]) {
            partitionStats { numMaterialized numPartitions numFailed numMaterializing }
            assetPartitionStatuses { __typename ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } }
        } }""",
    "latest materializations with metadata": """
        query { assetOrError(assetKey: {path: ["text_units"]}) { ... on Asset {
            assetMaterializations(limit: 25) { partition runId timestamp metadataEntries { label } }
        } } }""",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def graphql(port: int, query: str) -> tuple[float, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        body = json.loads(response.read())
    seconds = time.perf_counter() - started
    if body.get("errors"):
        raise RuntimeError(f"GraphQL errors: {body['errors']}")
    return seconds, body["data"]


def measure_project(root: Path) -> dict[str, Any]:
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(root), "GRAPHRAG_ROOT": str(root)}
    log = (root / "bench_ui_webserver.log").open("w")
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                    break
            except OSError as error:
                if process.poll() is not None or time.perf_counter() - started > START_SECONDS:
                    raise RuntimeError(f"the webserver did not start; see {log.name}") from error
                time.sleep(0.5)
        result: dict[str, Any] = {
            "project": str(root),
            "start_s": round(time.perf_counter() - started, 1),
            "queries": {},
        }
        for name, query in QUERIES.items():
            cold, data = graphql(port, query)
            warm = statistics.median(graphql(port, query)[0] for _ in range(5))
            result["queries"][name] = {"cold_s": round(cold, 3), "warm_s": round(warm, 3)}
            if "assetNodes" in data:
                result["partitions"] = data["assetNodes"][0]["partitionStats"]["numPartitions"]
        result["load_average"] = load_average()
        return result
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", type=Path, nargs="+")
    parser.add_argument(
        "--results", type=results_name, default="scale_ui.json", help="file name under bench/results/ ('-': print only)"
    )
    args = parser.parse_args()
    results = {"command": invocation(), "machine": machine_info(), "git": git_state(), "projects": []}
    for root in args.projects:
        results["projects"].append(measure_project(root.resolve()))
    rows = [
        [
            Path(p["project"]).name,
            p["partitions"],
            p["start_s"],
            *[f"{q['cold_s']:.2f} / {q['warm_s']:.2f}" for q in p["queries"].values()],
            " / ".join(f"{x:.2f}" for x in p["load_average"]),
        ]
        for p in results["projects"]
    ]
    print(
        markdown_table(
            ["project", "partitions", "webserver start s", *[f"{name}: cold / warm s" for name in QUERIES], "load avg"],
            rows,
        )
    )
    if args.results != "-":
        path = write_results(args.results, results)
        print(f"\nwritten: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
