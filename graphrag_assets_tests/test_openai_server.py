"""The scripted OpenAI-compatible server behaves like the real API where our client looks, and does
what its control endpoints say (tests run the real ``openai`` client against it)."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
import time
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

from graphrag_assets.core.tokens import count_tokens
from graphrag_assets_testkit.openai_server import echo_responder, embedding_vector


def _client(server: Any, **kwargs: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0, **kwargs)


def _chat(server: Any, content: str, **kwargs: Any) -> Any:
    async def go() -> Any:
        async with _client(server) as client:
            return await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": content}], **kwargs
            )

    return asyncio.run(go())


def _post_raw(url: str, payload: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_chat_echoes_last_user_message_with_usage_and_records_the_request(openai_server):
    response = _chat(
        openai_server, "What is a knowledge graph?", temperature=0.3, response_format={"type": "json_object"}
    )
    assert response.choices[0].message.content == "echo: What is a knowledge graph?"
    expected_prompt = count_tokens("What is a knowledge graph?") + 4 + 3
    assert response.usage.prompt_tokens == expected_prompt
    assert response.usage.completion_tokens == count_tokens("echo: What is a knowledge graph?")
    [call] = openai_server.calls("chat")
    assert call["outcome"] == "answered"
    assert call["body"]["temperature"] == 0.3
    assert call["body"]["response_format"] == {"type": "json_object"}
    assert call["headers"]["authorization"] == "Bearer test-key"
    assert call["usage"]["prompt_tokens"] == expected_prompt


def test_echo_responder_cuts_at_200_characters():
    body = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "x" * 300}]}
    assert echo_responder(body) == "echo: " + "x" * 200


def test_rules_first_match_wins_and_expire_after_their_uses(openai_server):
    openai_server.add_rule(r"graph", "rule one", times=1)
    openai_server.add_rule(r"graph|tree", "rule two")
    assert _chat(openai_server, "a graph").choices[0].message.content == "rule one"
    assert _chat(openai_server, "a graph").choices[0].message.content == "rule two"
    assert _chat(openai_server, "a tree").choices[0].message.content == "rule two"
    assert _chat(openai_server, "a rock").choices[0].message.content == "echo: a rock"


def test_faults_are_consumed_in_order_and_only_by_matching_requests(openai_server):
    openai_server.add_fault("status", status=503, match="second")
    openai_server.add_fault("status", status=429, retry_after=7, times=2)
    with pytest.raises(openai.RateLimitError) as first:
        _chat(openai_server, "first")
    assert first.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.InternalServerError):
        _chat(openai_server, "second")
    with pytest.raises(openai.RateLimitError):
        _chat(openai_server, "third")
    assert _chat(openai_server, "fourth").choices[0].message.content == "echo: fourth"
    outcomes = [(c["body"]["messages"][0]["content"], c["outcome"], c.get("status")) for c in openai_server.calls()]
    assert outcomes == [
        ("first", "status", 429),
        ("second", "status", 503),
        ("third", "status", 429),
        ("fourth", "answered", None),
    ]


def test_malformed_drop_and_delay_faults(openai_server):
    openai_server.add_fault("malformed")
    with pytest.raises(json.JSONDecodeError):
        _chat(openai_server, "a")
    openai_server.add_fault("drop")
    with pytest.raises(openai.APIConnectionError):
        _chat(openai_server, "b")
    openai_server.add_fault("delay", seconds=0.5)

    async def timed_out() -> None:
        async with _client(openai_server, timeout=0.1) as client:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "c"}])

    with pytest.raises(openai.APITimeoutError):
        asyncio.run(timed_out())
    assert [c["outcome"] for c in openai_server.calls()] == ["malformed", "drop", "delay"]


def test_streaming_sends_deltas_then_usage_then_done(openai_server):
    status, raw = _post_raw(
        openai_server.base_url + "/chat/completions",
        {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "stream these words"}],
        },
    )
    assert status == 200
    events = [line.removeprefix("data: ") for line in raw.decode().split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "echo: stream these words"
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) > 1
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == count_tokens("echo: stream these words")


def test_embeddings_are_deterministic_normalized_and_follow_the_requested_dimension(openai_server):
    async def go() -> Any:
        async with _client(openai_server) as client:
            floats = await client.embeddings.create(model="e", input=["alpha beta", "gamma"], encoding_format="float")
            b64 = await client.embeddings.create(model="e", input="alpha beta")  # openai asks base64
            wide = await client.embeddings.create(model="e", input="alpha beta", dimensions=16, encoding_format="float")
            return floats, b64, wide

    floats, b64, wide = asyncio.run(go())
    first = floats.data[0].embedding
    assert len(first) == 64 and math.isclose(sum(v * v for v in first), 1.0, rel_tol=1e-9)
    assert first == embedding_vector("alpha beta", 64)
    assert floats.data[1].embedding == embedding_vector("gamma", 64)
    assert b64.data[0].embedding == pytest.approx(first, abs=1e-6)
    assert len(wide.data[0].embedding) == 16
    assert floats.usage.prompt_tokens == count_tokens("alpha beta") + count_tokens("gamma")


def test_embeddings_of_texts_sharing_words_are_closer():
    def cosine(a: str, b: str) -> float:
        return sum(x * y for x, y in zip(embedding_vector(a, 64), embedding_vector(b, 64)))

    assert cosine("Scrooge counts his money", "Scrooge and his money") > cosine(
        "Scrooge counts his money", "a ghost appears"
    )


def test_base64_embeddings_are_little_endian_float32(openai_server):
    status, raw = _post_raw(
        openai_server.base_url + "/embeddings", {"model": "e", "input": ["x"], "encoding_format": "base64"}
    )
    assert status == 200
    data = base64.b64decode(json.loads(raw)["data"][0]["embedding"])
    assert list(struct.unpack("<64f", data)) == pytest.approx(embedding_vector("x", 64), abs=1e-6)


def test_models_endpoint_and_unknown_paths(openai_server):
    with urllib.request.urlopen(openai_server.base_url + "/models", timeout=5) as response:
        ids = [m["id"] for m in json.loads(response.read())["data"]]
    assert "gpt-4o-mini" in ids
    status, _ = _post_raw(openai_server.base_url + "/nothing", {})
    assert status == 404


def test_stats_report_max_in_flight_and_reset_clears_everything(openai_server):
    openai_server.set_latency(200)

    async def many() -> None:
        async with _client(openai_server) as client:
            await asyncio.gather(
                *(
                    client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                    for i in range(4)
                )
            )

    asyncio.run(many())
    stats = openai_server.stats()
    assert stats["counts"] == {"chat": 4}
    assert stats["max_in_flight"] == 4
    openai_server.add_rule("x", "y")
    openai_server.add_fault("drop")
    openai_server.reset()
    stats = openai_server.stats()
    assert stats["counts"] == {} and stats["pending_faults"] == 0 and stats["pending_rules"] == 0
    assert stats["latency_ms"] == 0 and openai_server.calls() == []


def test_factory_starts_a_server_with_a_custom_responder_and_latency(openai_server_factory):
    server = openai_server_factory(responder="graphrag_assets_testkit.openai_server:shouting_responder", latency_ms=300)
    started = time.monotonic()
    assert _chat(server, "hello").choices[0].message.content == "SHOUT HELLO"
    assert time.monotonic() - started >= 0.3
    assert server.stats()["latency_ms"] == 300


def test_factory_stops_its_servers_by_pid(openai_server_factory):
    server = openai_server_factory()
    server.stop()
    assert server.process.poll() is not None
