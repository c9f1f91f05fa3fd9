"""Cleaning answers before anyone parses them: reasoning blocks and almost-JSON.

Thinking models served by Ollama, vLLM or llama.cpp (DeepSeek-R1, Qwen3, QwQ) put their reasoning
in the answer's content as ``<think> ... </think>`` before the answer itself; parsers that expect
extraction records or JSON then find nothing ("0 entities extracted") or choke. The block is
removed here, once, for every caller, in whole answers and in streams.

When JSON was asked for but the server refused or ignored ``response_format``, the prompt's own
instructions are all there is, and models wrap the object in code fences or prose, or leave a
trailing comma. :func:`repair_json_answer` turns such an answer into the JSON it meant.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

OPEN, CLOSE = "<think>", "</think>"
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def strip_think(text: str) -> tuple[str, bool]:
    """``text`` without a leading ``<think>`` block, and whether there was one.

    An unterminated block (the model ran out of tokens while thinking) leaves no answer. A closing
    tag without an opening one (chat templates that put ``<think>`` in the prompt) ends the block.
    """
    head = text.lstrip()
    if head.startswith(OPEN):
        end = head.find(CLOSE)
        return (head[end + len(CLOSE) :].lstrip() if end >= 0 else ""), True
    end = text.find(CLOSE)
    if end >= 0 and OPEN not in text[:end]:
        return text[end + len(CLOSE) :].lstrip(), True
    return text, False


class ThinkFilter:
    """The streaming form of :func:`strip_think`: feed pieces, get what may be shown."""

    def __init__(self) -> None:
        self._buffer = ""
        self._state = "start"  # start -> thinking -> after -> answer, or start -> answer
        self.stripped = False

    def feed(self, piece: str) -> str:
        if self._state == "answer":
            return piece
        if self._state == "after":  # the whitespace between the block and the answer is dropped
            text = piece.lstrip()
            if text:
                self._state = "answer"
            return text
        self._buffer += piece
        if self._state == "start":
            head = self._buffer.lstrip()
            if not head or OPEN.startswith(head):
                return ""  # could still become <think>
            if not head.startswith(OPEN):
                self._state = "answer"
                out, self._buffer = self._buffer, ""
                return out
            self._state = "thinking"
            self.stripped = True
        end = self._buffer.find(CLOSE)
        if end < 0:
            return ""
        rest = self._buffer[end + len(CLOSE) :]
        self._buffer = ""
        self._state = "after"
        return self.feed(rest) if rest else ""

    def finish(self) -> str:
        """What is left when the stream ends (nothing of an unterminated block)."""
        out = self._buffer if self._state == "start" else ""
        self._buffer = ""
        return out


def _candidates(text: str) -> list[str]:
    found: list[str] = []
    fenced = _FENCE.search(text)
    if fenced:
        found.append(fenced.group(1))
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        start = min(starts)
        end = max(text.rfind("}"), text.rfind("]"))
        found.append(text[start : end + 1] if end > start else text[start:])
    return found


def repair_json_answer(text: str) -> str | None:
    """The JSON an answer meant, when it is not JSON as it stands; None when it is, or when
    nothing usable can be found in it."""
    try:
        json.loads(text)
        return None
    except ValueError:
        pass
    for candidate in _candidates(text):
        value: Any
        try:
            value = json.loads(candidate)
        except ValueError:
            try:
                value = json_repair.loads(candidate)
            except Exception:  # json_repair raises assorted errors on hopeless input
                continue
        if isinstance(value, (dict, list)) and value:
            return json.dumps(value, ensure_ascii=False)
    return None
