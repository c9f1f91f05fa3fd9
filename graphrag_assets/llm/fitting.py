"""Answering "prompt longer than the context window" by sending a shorter prompt.

Local servers run models with small windows (vLLM's ``--max-model-len``, llama.cpp's ``-c``), and
a report context or a query context built for a 128k-token model does not fit. vLLM, llama.cpp and
OpenAI reject such a request with HTTP 400 and (mostly) say how large the window is and how many
tokens were asked for; we shorten the prompt to fit and ask again rather than fail the step.

What is cut: the longest message loses lines from its end, keeping its last lines. Every prompt
here puts its instructions first and its data (the context tables, the passage) last, and context
tables are ordered most important first, so this drops the least important rows, as a smaller
context budget would have. A message is never cut below a quarter of its length: past that the
prompt would no longer say what to do, and the call fails with a clear message instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from graphrag_assets.core.tokens import count_tokens, get_tokenizer

KEEP_LAST_LINES = 2  # the closing instruction ("Answer:") and the line before it
MIN_KEPT_SHARE = 0.25
SAFETY = 0.95  # our tokenizer is not the server's: aim a little lower
DEFAULT_ANSWER_ROOM = 1024  # tokens left for the answer when the server did not say
FALLBACK_SHARE = 0.75  # when the server gave no figures: cut a quarter and try again

_WINDOW = re.compile(r"(?:maximum context length|context (?:length|window|size))(?: is| of)?(?: only)? \(?(\d+)", re.I)
_REQUESTED = re.compile(r"(?:(?:requested|resulted in) |request \()(\d+) tokens", re.I)
_IN_MESSAGES = re.compile(r"(\d+) (?:tokens )?(?:in|from) the (?:messages|prompt|input)", re.I)
_IN_COMPLETION = re.compile(r"(\d+) (?:tokens )?(?:in|for) the completion", re.I)


@dataclass(frozen=True)
class Overflow:
    """What a context-length error said, in the server's tokens (None where it said nothing)."""

    window: int | None
    requested: int | None
    prompt: int | None
    completion: int | None


def _number(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    return int(match.group(1)) if match else None


def parse_overflow(detail: str) -> Overflow:
    return Overflow(
        _number(_WINDOW, detail),
        _number(_REQUESTED, detail),
        _number(_IN_MESSAGES, detail),
        _number(_IN_COMPLETION, detail),
    )


def target_tokens(overflow: Overflow, prompt_tokens: int, max_tokens: int | None) -> int:
    """How many of our tokens the prompt may have to fit the window, leaving room to answer."""
    server_prompt = overflow.prompt or (overflow.requested - (overflow.completion or 0) if overflow.requested else None)
    if not overflow.window or not server_prompt:
        return int(prompt_tokens * FALLBACK_SHARE)
    answer_room = overflow.completion or max_tokens or min(DEFAULT_ANSWER_ROOM, overflow.window // 4)
    allowed = overflow.window - answer_room
    return max(0, int(allowed * prompt_tokens / server_prompt * SAFETY))


def _cut_lines(text: str, excess: int, encoding: str) -> str | None:
    """``text`` shorter by ``excess`` tokens, cut before its last lines; None if that is too much."""
    lines = text.split("\n")
    tail = lines[-KEEP_LAST_LINES:] if len(lines) > KEEP_LAST_LINES else []
    body = lines[: len(lines) - len(tail)]
    floor = int(count_tokens(text, encoding) * MIN_KEPT_SHARE)
    kept = count_tokens("\n".join(body), encoding)
    if kept - excess < floor:
        return None
    while excess > 0 and body:
        last = body[-1]
        cost = count_tokens(last, encoding) + 1
        if cost <= excess:
            body.pop()
            excess -= cost
        else:
            tokenizer = get_tokenizer(encoding)
            tokens = tokenizer.encode_ordinary(last)
            body[-1] = tokenizer.decode(tokens[: max(0, len(tokens) - excess)])
            excess = 0
    return "\n".join([*body, *tail])


def shrink_messages(messages: Sequence[dict[str, str]], target: int, encoding: str) -> list[dict[str, str]] | None:
    """The messages with the longest one cut so the total is at most ``target`` tokens, or None
    when that would cut too much."""
    counts = [count_tokens(m["content"], encoding) for m in messages]
    excess = sum(counts) - target
    if target <= 0:
        return None
    if excess <= 0:
        return [dict(m) for m in messages]
    longest = max(range(len(messages)), key=counts.__getitem__)
    shortened = _cut_lines(messages[longest]["content"], excess, encoding)
    if shortened is None:
        return None
    return [{**m, "content": shortened} if i == longest else dict(m) for i, m in enumerate(messages)]
