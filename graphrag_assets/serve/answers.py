"""Answering a question on a project's current build, whole or as a stream of text.

The same path as ``graphrag-assets query`` (``SearchRequest`` → ``run_query``) with what a
server keeps instead of rebuilding per question: the loaded build, the open model clients, the
user's prompts and the token counter. Engines run in the server's event loop (their model calls
are async); ``on_token`` pushes the answer's text into a queue that the HTTP response drains.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from graphrag_assets.project.querying import uses_llm
from graphrag_assets.query.engine import run_query
from graphrag_assets.query.request import QueryOptions, SearchRequest
from graphrag_assets.query.results import QueryResult
from graphrag_assets.serve.errors import ServeError
from graphrag_assets.serve.projects import Project
from graphrag_assets.serve.snapshot import Snapshot


@dataclass(frozen=True)
class Question:
    """What is asked, of which project, with which options (checked against the server's limits)."""

    text: str
    options: QueryOptions = field(default_factory=QueryOptions)

    def check(self, max_chars: int) -> None:
        texts = [self.text, self.options.system_prompt, self.options.response_type]
        texts += [str(turn.get("content", "")) for turn in self.options.conversation_history or []]
        if any(text and not _encodable(text) for text in texts):
            raise ServeError(
                400,
                "the request holds a lone surrogate escape (such as \\ud800), which is no character; "
                "send text as UTF-8, with escapes only in pairs.",
                "invalid_text",
            )
        if not self.text.strip():
            raise ServeError(400, "the question is empty; send the question to ask as text.")
        if len(self.text) > max_chars:
            raise ServeError(
                400,
                f"the question is {len(self.text):,} characters long and the limit is {max_chars:,} "
                "(serve.max_question_chars); shorten it.",
                "question_too_long",
            )
        prompt = self.options.system_prompt or ""
        if len(prompt) > max_chars:
            raise ServeError(
                400,
                f"the system prompt is {len(prompt):,} characters long and the limit is {max_chars:,} "
                "(serve.max_question_chars); shorten it.",
                "system_prompt_too_long",
            )


def _encodable(text: str) -> bool:
    """False for text holding lone surrogates (JSON allows ``\\ud800``; UTF-8 cannot encode it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class Answered:
    """A finished answer and the build it was made from (references are looked up in the same one)."""

    result: QueryResult
    snapshot: Snapshot


def search_request(project: Project, snapshot: Snapshot, question: Question, on_token=None) -> SearchRequest:
    use_model = uses_llm(project.settings, question.options.method) and not question.options.context_only
    return SearchRequest(
        question.text,
        snapshot.data,
        project.settings.query,
        chat_model=project.models.chat if use_model else None,
        embedder=project.models.embedder,
        options=question.options,
        prompts=project.prompts,
        on_token=on_token,
        count=project.count,
        reranker=project.models.reranker,
    )


async def answer(project: Project, question: Question, snapshot: Snapshot) -> Answered:
    """The whole answer, from ``snapshot`` (taken by the caller when the request arrived)."""
    result = await run_query(search_request(project, snapshot, question))
    return Answered(result, snapshot)


_DONE = object()


async def stream_answer(project: Project, question: Question, snapshot: Snapshot) -> AsyncIterator[str | Answered]:
    """The answer's text pieces as they are written, then the :class:`Answered` itself.

    The search runs as a task; when the client goes away (the consumer is closed) it is cancelled.
    """
    queue: asyncio.Queue[object] = asyncio.Queue()
    task = asyncio.create_task(run_query(search_request(project, snapshot, question, on_token=queue.put_nowait)))
    task.add_done_callback(lambda _: queue.put_nowait(_DONE))
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                break
            yield str(item)
        yield Answered(task.result(), snapshot)
    finally:
        if not task.done():
            task.cancel()
