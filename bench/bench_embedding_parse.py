"""Client CPU per embeddings request: the ``openai`` package's parsed response vs the raw JSON body.

    python bench/bench_embedding_parse.py [--requests 40] [--batch 16] [--dim 1536]

Sends the same embeddings requests to the scripted OpenAI-compatible server (its own process, so
its work is not counted in CPU; it is in wall time) four ways, each measured as this process's CPU
time (``time.process_time``) and wall time, with the response body's size:

1. ``client.embeddings.create`` (``encoding_format: float``) — the response parsed into the
   package's pydantic models, which walks every number of every vector through its type machinery;
2. ``client.embeddings.with_raw_response.create`` (float) + ``json.loads``;
3. the same with ``orjson.loads`` — what :mod:`graphrag_assets.llm.embeddings` did until base64;
4. ``encoding_format: base64`` + ``orjson.loads`` + :func:`~graphrag_assets.llm.embeddings.decode_vector`
   (a float32 view of the decoded bytes, no numpy) — what the embedder does now.

The ratios (÷ parsed) are the figures to compare across runs; the load average is printed with
them. Writes bench/results/embedding_parse.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results"


READERS = (
    ("parsed", "openai parsed model"),
    ("json", "raw body + json"),
    ("orjson", "raw body + orjson"),
    ("base64", "base64 + orjson + float32 view"),
)


def run(base_url: str, requests: int, batch: int, reader: str) -> tuple[float, float, int, int]:
    import openai
    import orjson

    from graphrag_assets.llm.embeddings import decode_vector

    loads = {"json": json.loads, "orjson": orjson.loads, "base64": orjson.loads}.get(reader)
    encoding_format = "base64" if reader == "base64" else "float"
    size = 0

    texts = [[f"text {r}-{i} with several words in it" for i in range(batch)] for r in range(requests)]

    async def go() -> int:
        nonlocal size
        numbers = 0
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            for inputs in texts:  # one at a time: CPU per request, no overlap with the server
                if loads is not None:
                    raw = await client.embeddings.with_raw_response.create(
                        model="m", input=inputs, encoding_format=encoding_format
                    )
                    size = len(raw.content)
                    body = loads(raw.content)
                    if reader == "base64":
                        numbers += sum(len(decode_vector(item["embedding"])[0]) for item in body["data"])
                    else:
                        numbers += sum(len(item["embedding"]) for item in body["data"])
                else:
                    response = await client.embeddings.create(model="m", input=inputs, encoding_format="float")
                    numbers += sum(len(item.embedding) for item in response.data)
        return numbers

    cpu, wall = time.process_time(), time.perf_counter()
    numbers = asyncio.run(go())
    return time.process_time() - cpu, time.perf_counter() - wall, numbers, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--dim", type=int, default=1536)
    args = parser.parse_args()
    load_start = [round(x, 2) for x in os.getloadavg()]
    server = ScriptedOpenAIServer.start(embedding_dim=args.dim)
    try:
        run(server.base_url, 2, args.batch, "parsed")  # warm up imports and connections
        measured = {reader: run(server.base_url, args.requests, args.batch, reader) for reader, _ in READERS}
    finally:
        server.stop()
    load_end = [round(x, 2) for x in os.getloadavg()]
    parsed = measured["parsed"]
    result = {
        "requests": args.requests,
        "batch": args.batch,
        "dim": args.dim,
        **{
            reader: {
                "cpu_s": round(cpu, 3),
                "wall_s": round(wall, 3),
                "cpu_ms_per_1000_numbers": round(1e6 * cpu / numbers, 3),
                "cpu_ratio_over_parsed": round(cpu / parsed[0], 3),
                "body_bytes": size,
            }
            for reader, (cpu, wall, numbers, size) in measured.items()
        },
        "load_start": load_start,
        "load_end": load_end,
    }
    print(f"{args.requests} requests of {args.batch} x {args.dim} floats; load {load_start} -> {load_end}")
    for reader, label in READERS:
        r = result[reader]
        body = f"body {r['body_bytes'] / 1024:.0f} KiB" if r["body_bytes"] else "body n/a"
        print(
            f"  {label:24s} CPU {r['cpu_s']:6.2f} s  wall {r['wall_s']:6.2f} s  {body:14s} "
            f"({r['cpu_ms_per_1000_numbers']:.3f} ms CPU per 1,000 numbers; {r['cpu_ratio_over_parsed']:.3f} of parsed)"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "embedding_parse.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
