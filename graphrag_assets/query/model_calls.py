"""The chat and embedding calls of one query, counted into its usage.

Every engine calls the models through :class:`ModelCalls`, so usage is accounted the same way
everywhere, and the asker's own instructions reach the final answer's call only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.llm.types import ChatModel, ChatOptions, EmbeddingModel, Message
from graphrag_assets.query.results import QueryUsage

TokenCounter = Callable[[str], int]
TokenCallback = Callable[[str], None]


class ModelCalls:
    """The model calls of one query, counted into ``usage``.

    Intermediate calls (map, rate, primer, follow-ups) go through :meth:`chat`; the final answer
    goes through :meth:`answer`, which streams to ``on_token`` when one is given (token counts of a
    streamed answer are estimated with the tokenizer, since the stream reports none) and adds the
    asker's ``instructions`` (a system prompt) to its system message.
    """

    def __init__(
        self,
        chat_model: ChatModel | None,
        embedder: EmbeddingModel | None,
        *,
        on_token: TokenCallback | None = None,
        count: TokenCounter | None = None,
        instructions: str | None = None,
    ):
        self.chat_model = chat_model
        self.instructions = instructions
        self.embedder = embedder
        self.on_token = on_token
        self.count = count or token_counter()
        self.usage = QueryUsage()
        self._started = time.perf_counter()

    @property
    def llm_available(self) -> bool:
        return self.chat_model is not None

    def finish(self) -> QueryUsage:
        """Stamp the wall time since this object was created and return the usage."""
        self.usage.seconds = time.perf_counter() - self._started
        return self.usage

    async def embed(self, text: str, purpose: str) -> list[float]:
        if self.embedder is None:
            raise UserError(
                "this search needs an embedding model, and none is configured; set llm.embeddings in graphrag.yaml."
            )
        self.usage.embedding_calls += 1
        vectors = await self.embedder.embed([text], purpose=purpose)
        return [float(x) for x in vectors[0]]

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        json_mode: bool = False,
        use_cache: bool = False,
        prompt_version: str = "",
    ) -> str:
        model = self._require_model()
        options = ChatOptions(json_mode=json_mode, prompt_version=prompt_version, use_cache=use_cache)
        result = await model.chat(messages, purpose=purpose, options=options)
        self._count_call(purpose, cached=result.cached)
        self.usage.prompt_tokens += result.prompt_tokens
        self.usage.completion_tokens += result.completion_tokens
        return result.text

    async def answer(self, messages: Sequence[Message], *, purpose: str, prompt_version: str = "") -> str:
        """The final answer: streamed to ``on_token`` when set, never cached."""
        messages = with_instructions(messages, self.instructions)
        if self.on_token is None:
            return await self.chat(messages, purpose=purpose, prompt_version=prompt_version)
        model = self._require_model()
        parts: list[str] = []
        async for delta in model.stream(messages, purpose=purpose):
            parts.append(delta)
            self.on_token(delta)
        text = "".join(parts)
        self._count_call(purpose, cached=False)
        self.usage.prompt_tokens += sum(self.count(m["content"]) for m in messages)
        self.usage.completion_tokens += self.count(text)
        return text

    def _require_model(self) -> ChatModel:
        if self.chat_model is None:
            raise RuntimeError("a chat call was attempted in no-LLM mode")
        return self.chat_model

    def _count_call(self, purpose: str, *, cached: bool) -> None:
        self.usage.chat_calls += 1
        self.usage.cached_calls += int(cached)
        self.usage.calls_by_purpose[purpose] = self.usage.calls_by_purpose.get(purpose, 0) + 1


def with_instructions(messages: Sequence[Message], instructions: str | None) -> list[Message]:
    """``messages`` with ``instructions`` appended to the first system message (one is added in
    front when there is none). One system message, not two: several chat templates (Llama,
    Mistral, Gemma servers) accept a system message only in the first position."""
    result: list[Message] = [{"role": m["role"], "content": m["content"]} for m in messages]
    extra = (instructions or "").strip()
    if not extra:
        return result
    for message in result:
        if message["role"] == "system":
            message["content"] = f"{message['content'].rstrip()}\n\n{extra}"
            return result
    return [{"role": "system", "content": extra}, *result]
