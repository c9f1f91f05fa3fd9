"""Measure the LLM layer's own costs against the scripted OpenAI-compatible server.

    python bench/bench_llm_client.py [--calls 400] [--cache-rows 50000] [--only-chat-parsing]

Prints:
1. cache storage costs in DuckDB: opening a connection, loading the key set, one lookup batch,
   one write of 1 / 16 / 256 rows (the figures behind the cache design in graphrag_assets/llm/cache.py);
2. overhead per call at 0 ms server latency: the bare ``openai`` client, our chat model on a cold
   cache (calls + writes), and a re-run answered from the cache;
3. concurrency efficiency at 500 ms latency: ideal time (rounds x latency) / measured time;
4. reading chat answers, client CPU and wall per call at 0 ms latency and concurrency 25 with an
   answer the size of an extraction answer: the ``openai`` package's parsed ``ChatCompletion``
   (``chat.completions.create``), ``with_raw_response`` + ``orjson`` (skipping the pydantic
   models), the client's own ``post`` + ``orjson`` (skipping the request transforms too: what
   :mod:`graphrag_assets.llm.chat` uses) and a bare ``httpx2`` post + ``orjson``; rounds alternate
   between them and the median is printed, with the load average (``--only-chat-parsing``: this
   part alone).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from graphrag_assets.core.settings import LLMSettings  # noqa: E402
from graphrag_assets.llm.cache import CHAT_TABLE, LLMCache, chat_cache_key  # noqa: E402
from graphrag_assets.llm.factory import build_chat_model  # noqa: E402
from graphrag_assets.llm.usage import UsageMeter  # noqa: E402
from graphrag_assets.storage.database import connect  # noqa: E402
from graphrag_assets.storage.response_cache import CHAT_TABLE_DDL  # noqa: E402
from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer  # noqa: E402


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def fill_cache(db: Path, rows: int) -> list[str]:
    import pyarrow as pa

    keys = [
        chat_cache_key(
            model="m",
            messages=[{"role": "user", "content": f"prompt {i}"}],
            temperature=0.0,
            max_tokens=None,
            json_mode=False,
            prompt_version="",
        )
        for i in range(rows)
    ]
    response = json.dumps({"text": "x" * 2000})
    with connect(db) as conn:
        conn.execute(CHAT_TABLE_DDL)
        table = pa.table(
            {
                "key": keys,
                "kind": ["chat"] * rows,
                "model": ["m"] * rows,
                "purpose": ["p"] * rows,
                "response": [response] * rows,
                "prompt_tokens": [100] * rows,
                "completion_tokens": [50] * rows,
            }
        )
        conn.register("rows", table)
        conn.execute(f"insert into {CHAT_TABLE} by name select *, now()::timestamp as created_at from rows")
    return keys


def bench_storage(workdir: Path, cache_rows: int) -> None:
    db = workdir / "storage.duckdb"
    keys = fill_cache(db, cache_rows)
    print(f"\n[1] cache storage, {cache_rows} rows of ~2 KB answers ({db.stat().st_size / 1e6:.0f} MB file)")

    repeats = 20
    started = time.perf_counter()
    for _ in range(repeats):
        with connect(db):
            pass
    print(f"  open + close a connection            {ms((time.perf_counter() - started) / repeats)}")

    cache = LLMCache(db)
    started = time.perf_counter()
    asyncio.run(cache.get_chat("absent"))
    print(f"  load the key set (first lookup)      {ms(time.perf_counter() - started)}")

    started = time.perf_counter()
    for i in range(repeats):
        asyncio.run(cache.get_chat(keys[i * 7]))
    print(f"  one hit, alone in its batch          {ms((time.perf_counter() - started) / repeats)}")

    async def many(batch: list[str]) -> None:
        await asyncio.gather(*(cache.get_chat(k) for k in batch))

    started = time.perf_counter()
    asyncio.run(many(keys[:1000]))
    elapsed = time.perf_counter() - started
    print(f"  1000 hits in one loop turn           {ms(elapsed)}  ({ms(elapsed / 1000).strip()} per hit)")
    started = time.perf_counter()
    for i in range(1000):
        asyncio.run(cache.get_chat(f"miss-{i}"))
    print(f"  one miss (key set, no query)         {ms((time.perf_counter() - started) / 1000)}")

    for size in (1, 16, 256):
        elapsed = 0.0
        for rep in range(5):
            cache.flush()
            started = time.perf_counter()
            for i in range(size):
                cache.put_chat(
                    f"w{size}-{rep}-{i}", model="m", purpose="p", text="y" * 2000, prompt_tokens=1, completion_tokens=1
                )
            cache.flush()
            elapsed += time.perf_counter() - started
        print(f"  write {size:3d} answers at once            {ms(elapsed / 5)}  (mean of 5)")
    cache.close()


def calls(n: int) -> list[str]:
    return [f"benchmark prompt number {i} with a few words of context" for i in range(n)]


def bench_overhead(server: ScriptedOpenAIServer, workdir: Path, n: int) -> None:
    import openai

    print(f"\n[2] overhead per call at 0 ms latency, {n} calls, concurrency 25")

    async def bare() -> None:
        semaphore = asyncio.Semaphore(25)
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:

            async def one(text: str) -> None:
                async with semaphore:
                    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])

            await asyncio.gather(*(one(t) for t in calls(n)))

    asyncio.run(bare())  # warm up imports and the server
    server.reset()
    started = time.perf_counter()
    asyncio.run(bare())
    bare_time = time.perf_counter() - started
    print(f"  bare openai client                   {ms(bare_time / n)} per call")

    settings = LLMSettings(base_url=server.base_url, concurrency=25)
    db = workdir / "overhead.duckdb"

    async def ours(model: object) -> None:
        await asyncio.gather(*(model.chat([{"role": "user", "content": t}], purpose="bench") for t in calls(n)))  # type: ignore[attr-defined]

    model = build_chat_model(settings, db, UsageMeter())
    started = time.perf_counter()
    asyncio.run(ours(model))
    model.close()
    cold = time.perf_counter() - started
    print(f"  our client, cold cache (+ writes)    {ms(cold / n)} per call  (+{ms((cold - bare_time) / n).strip()})")
    print(f"    cache writes: {model.cache.stats.flushes} for {model.cache.stats.rows_written} answers")

    model = build_chat_model(settings, db, UsageMeter())
    server.reset()
    started = time.perf_counter()
    asyncio.run(ours(model))
    model.close()
    warm = time.perf_counter() - started
    assert server.stats()["counts"] == {}, "a re-run must not call the server"
    print(
        f"  our client, re-run from the cache    {ms(warm / n)} per call  ({model.cache.stats.lookup_queries} lookup query)"
    )

    nocache = build_chat_model(settings.model_copy(update={"cache": False}), None, UsageMeter())
    started = time.perf_counter()
    asyncio.run(ours(nocache))
    plain = time.perf_counter() - started
    print(f"  our client, cache off                {ms(plain / n)} per call")


def bench_concurrency(server: ScriptedOpenAIServer, workdir: Path) -> None:
    latency, n, concurrency = 500, 100, 25
    print(f"\n[3] concurrency at {latency} ms latency: {n} calls, concurrency {concurrency}")
    server.reset()
    server.set_latency(latency)
    model = build_chat_model(
        LLMSettings(base_url=server.base_url, concurrency=concurrency, cache=False), None, UsageMeter()
    )

    async def run() -> None:
        await asyncio.gather(*(model.chat([{"role": "user", "content": t}], purpose="bench") for t in calls(n)))

    async def bare() -> None:
        import openai

        semaphore = asyncio.Semaphore(concurrency)
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:

            async def one(text: str) -> None:
                async with semaphore:
                    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])

            await asyncio.gather(*(one(t) for t in calls(n)))

    ideal = (n / concurrency) * latency / 1000
    for name, job in (("bare openai client", bare), ("our client", run)):
        server.reset()
        server.set_latency(latency)
        started = time.perf_counter()
        asyncio.run(job())
        elapsed = time.perf_counter() - started
        stats = server.stats()
        print(
            f"  {name:20s} {elapsed:.2f} s, ideal {ideal:.2f} s, efficiency {ideal / elapsed:.0%}, "
            f"max in flight at the server {stats['max_in_flight']}"
        )
    server.set_latency(0)


EXTRACTION_SIZED_ANSWER = (
    "\n".join(
        f'("entity"<|>NAME {i}<|>PERSON<|>A description of name {i} and what the passage says about them)##'
        for i in range(14)
    )
    + "<|COMPLETE|>"
)  # ~1.4 KB, like the stand-in's extraction answers


def bench_chat_parsing(server: ScriptedOpenAIServer, n: int, rounds: int = 7) -> None:
    import httpx2 as httpx  # the HTTP client the openai package is built on
    import openai
    import orjson

    print(
        f"\n[4] reading chat answers at 0 ms latency: {n} calls, concurrency 25, {len(EXTRACTION_SIZED_ANSWER)}-char answers, "
        f"median of {rounds} alternating rounds"
    )
    server.reset()
    server.add_rule(".", EXTRACTION_SIZED_ANSWER)
    semaphore_size = 25

    async def parsed(client: openai.AsyncOpenAI, text: str) -> str:
        response = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        return response.choices[0].message.content or "" if response.usage.prompt_tokens else ""

    async def raw(client: openai.AsyncOpenAI, text: str) -> str:
        response = await client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": text}]
        )
        body = orjson.loads(response.content)
        return body["choices"][0]["message"]["content"] if body["usage"]["prompt_tokens"] else ""

    async def bare(client: httpx.AsyncClient, text: str) -> str:
        response = await client.post(
            "/chat/completions",
            content=orjson.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}),
            headers={"Authorization": "Bearer x", "Content-Type": "application/json"},
        )
        response.raise_for_status()
        body = orjson.loads(response.content)
        return body["choices"][0]["message"]["content"] if body["usage"]["prompt_tokens"] else ""

    async def posted(client: openai.AsyncOpenAI, text: str) -> str:
        response = await client.post(
            "/chat/completions",
            body={"model": "m", "messages": [{"role": "user", "content": text}]},
            cast_to=object,
            options={"headers": {"X-Stainless-Raw-Response": "true"}},
        )
        body = orjson.loads(response.content)
        return body["choices"][0]["message"]["content"] if body["usage"]["prompt_tokens"] else ""

    def client_for(kind: str) -> object:
        if kind == "bare httpx2 + orjson":
            return httpx.AsyncClient(base_url=server.base_url, timeout=60)
        return openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)

    kinds = {
        "create (parsed models)": parsed,
        "with_raw_response + orjson": raw,
        "client.post + orjson (ours)": posted,
        "bare httpx2 + orjson": bare,
    }

    def one_round(kind: str) -> tuple[float, float]:
        async def go() -> None:
            semaphore = asyncio.Semaphore(semaphore_size)
            async with client_for(kind) as client:  # type: ignore[attr-defined]

                async def one(text: str) -> None:
                    async with semaphore:
                        assert await kinds[kind](client, text) == EXTRACTION_SIZED_ANSWER

                await asyncio.gather(*(one(t) for t in calls(n)))

        cpu, wall = time.process_time(), time.perf_counter()
        asyncio.run(go())
        return (time.process_time() - cpu) / n, (time.perf_counter() - wall) / n

    for kind in kinds:  # warm up imports and connections
        one_round(kind)
    load_start = [round(x, 2) for x in os.getloadavg()]
    measured: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for _ in range(rounds):
        for kind in kinds:
            measured[kind].append(one_round(kind))
    load_end = [round(x, 2) for x in os.getloadavg()]
    anchor = statistics.median(cpu for cpu, _ in measured["create (parsed models)"])
    for kind, values in measured.items():
        cpu = statistics.median(c for c, _ in values)
        wall = statistics.median(w for _, w in values)
        print(f"  {kind:28s} CPU {ms(cpu)} per call ({cpu / anchor:.2f} of create), wall {ms(wall)} per call")
    print(f"  load {load_start} -> {load_end}")
    server.reset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--cache-rows", type=int, default=50_000)
    parser.add_argument("--only-chat-parsing", action="store_true", help="run part 4 alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if not args.only_chat_parsing:
            bench_storage(workdir, args.cache_rows)
        server = ScriptedOpenAIServer.start()
        try:
            if not args.only_chat_parsing:
                bench_overhead(server, workdir, args.calls)
                bench_concurrency(server, workdir)
            bench_chat_parsing(server, args.calls)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
