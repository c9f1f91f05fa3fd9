"""Retry decisions, backoff delays, key scrubbing and the sliding-window limiter (pure parts)."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from graphrag_assets.core.errors import LLMError
from graphrag_assets.llm.rate_limit import SlidingWindowLimiter
from graphrag_assets.llm.retry import (
    Failure,
    FailureContext,
    MalformedResponse,
    RetryHooks,
    RetryPolicy,
    call_with_retries,
    classify,
    describe_failure,
    parse_retry_after,
    scrub,
)


def test_full_jitter_stays_within_the_exponential_cap():
    policy = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=5.0)
    rng = random.Random(7)
    for retry in range(6):
        cap = min(5.0, 2.0**retry)
        delays = [policy.delay(retry, None, rng) for _ in range(200)]
        assert all(0 <= d <= cap for d in delays)
        assert max(delays) > cap * 0.8  # jitter spreads over the whole range


def test_retry_after_is_honoured_with_small_jitter_and_capped():
    policy = RetryPolicy(max_retries=3, base_delay=0.5, max_delay=10.0)
    rng = random.Random(1)
    assert all(3.0 <= policy.delay(0, 3.0, rng) <= 3.5 for _ in range(50))
    assert policy.delay(0, 30.0, rng) == 10.0


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


def test_classify_non_model_errors_as_bugs():
    assert classify(KeyError("x")) is None
    assert classify(MalformedResponse("no choices")).kind == "malformed"
    assert classify(json.JSONDecodeError("bad", "{", 0)).retryable


def test_scrub_removes_configured_and_key_shaped_secrets():
    key = "abc123-azure-key-0123456789"
    text = f"bad key {key}; sk-proj-XYZ123abc; provided: sk-ab***yz; header Bearer tok123"
    cleaned = scrub(text, [key, None])
    assert key not in cleaned and "sk-proj" not in cleaned and "sk-ab" not in cleaned and "tok123" not in cleaned
    assert cleaned.startswith("bad key ***")


def test_describe_failure_is_one_sentence_without_the_key():
    key = "sk-live-SECRETSECRET"
    error = describe_failure(
        Failure("auth", False, 401, None, f"Incorrect API key provided: {key}"),
        1,
        FailureContext("chat", "http://host:1/v1", "gpt-x", 30, "llm.chat_model", "llm.base_url", [key]),
    )
    message = str(error)
    assert isinstance(error, LLMError)
    assert message == (
        "the chat endpoint http://host:1/v1 (model 'gpt-x') failed with HTTP 401: "
        "Incorrect API key provided: ***; check OPENAI_API_KEY / llm.api_key."
    )


def test_call_with_retries_stops_at_max_retries_and_propagates_bugs():
    calls = []

    async def always_malformed() -> None:
        calls.append(1)
        raise MalformedResponse("x")

    def give_up(failure: Failure, attempts: int) -> LLMError:
        return LLMError(f"{failure.kind} after {attempts}")

    with pytest.raises(LLMError, match="malformed after 3"):
        asyncio.run(call_with_retries(always_malformed, RetryPolicy(2, 0.0, 0.0), RetryHooks(give_up)))
    assert len(calls) == 3

    async def bug() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        asyncio.run(call_with_retries(bug, RetryPolicy(2, 0.0, 0.0), RetryHooks(give_up)))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_request_limit_waits_for_the_oldest_request_to_leave_the_window():
    clock = FakeClock()
    limiter = SlidingWindowLimiter(requests_per_minute=2, clock=clock)
    limiter._events.extend([(0.0, 0), (10.0, 0)])
    clock.now = 15.0
    assert limiter.wait_time(0) == 45.0
    clock.now = 60.0
    assert limiter.wait_time(0) == 0.0  # the first one left the window


def test_token_limit_waits_until_enough_tokens_expire():
    clock = FakeClock()
    limiter = SlidingWindowLimiter(tokens_per_minute=1000, clock=clock)
    limiter._events.extend([(0.0, 600), (20.0, 300)])
    limiter._tokens_in_window = 900
    clock.now = 30.0
    assert limiter.wait_time(100) == 0.0
    assert limiter.wait_time(200) == 30.0  # needs the 600 from t=0 to expire at t=60
    assert limiter.wait_time(800) == 50.0  # needs both to expire
    assert limiter.wait_time(5000) == 50.0  # larger than the budget: waits for an empty window


def test_acquire_counts_requests_and_is_free_without_limits():
    unlimited = SlidingWindowLimiter()
    assert not unlimited.active
    asyncio.run(unlimited.acquire(10))
    limited = SlidingWindowLimiter(requests_per_minute=5, tokens_per_minute=100)
    asyncio.run(limited.acquire(40))
    asyncio.run(limited.acquire(40))  # a second event loop is fine
    assert len(limited._events) == 2 and limited._tokens_in_window == 80
