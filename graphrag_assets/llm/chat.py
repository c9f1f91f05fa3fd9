""":class:`~graphrag_assets.llm.types.ChatModel` on any OpenAI-compatible endpoint.

Besides the shared machinery of :mod:`.client`, a chat call adapts to the server it talks to. When
the server refuses part of a request with one of the documented errors (see docs/model-servers.md),
the call is changed and sent again at once, and the fact is recorded in :mod:`.capabilities` so
later calls are right the first time:

- ``max_tokens`` refused ("use max_completion_tokens", OpenAI reasoning models): the limit is sent
  as ``max_completion_tokens`` (and back, for a server that only knows the old name);
- ``temperature`` refused (reasoning models accept only their default): it is left out;
- ``response_format`` refused: ``json_schema`` falls back to ``json_object``, that to the prompt's
  own instructions; the answer is then repaired into JSON (:mod:`.answers`);
- ``stream_options`` refused: streams are asked for without usage, which is then counted here;
- the prompt is longer than the context window: it is shortened to fit (:mod:`.fitting`).

Every answer loses the ``<think>`` block reasoning models put first, before anything parses it
(and before it is cached). What was adapted is counted in the usage meter's notes, which go to the
step's metadata, and told to the user once per process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from graphrag_assets.llm.answers import ThinkFilter, repair_json_answer, strip_think
from graphrag_assets.llm.cache import CHAT_TABLE, chat_cache_key
from graphrag_assets.llm.capabilities import UNKNOWN, Capabilities
from graphrag_assets.llm.client import Endpoint, ModelServices, OpenAIModel
from graphrag_assets.llm.fitting import parse_overflow, shrink_messages, target_tokens
from graphrag_assets.llm.retry import Failure, MalformedResponse, call_with_retries, classify
from graphrag_assets.llm.types import DEFAULT_CHAT_OPTIONS, ChatOptions, ChatResult, Message
from graphrag_assets.llm.usage import estimate_cost

DRY_RUN_COMPLETION_TOKENS = 500  # assumed answer size when a dry run has no max_tokens to go by
MAX_ADAPTATIONS = 6  # changes to one request before its error is final
MAX_SHRINKS = 3
SHRINK_AT_LEAST = 0.9  # each shortening removes at least a tenth of the prompt

_RESPONSE_FORMAT = re.compile(r"response_format|json_schema|json_object|json mode|structured output", re.I)
_NEEDS_JSON_WORD = re.compile(r"must contain the word .?json", re.I)
_UNSUPPORTED = re.compile(r"unsupported|not supported|unknown|unrecognized|not permitted|extra (inputs|fields)", re.I)
# The ``openai`` client's own switch (what ``with_raw_response`` sends): the answer comes back unparsed.
_RAW_RESPONSE = {"headers": {"X-Stainless-Raw-Response": "true"}}


@dataclass(frozen=True)
class _Completion:
    """What a non-streamed answer says that a call uses, read from the body the server sent."""

    content: str
    finish_reason: str | None
    usage: Mapping[str, Any] | None


async def _post_completion(client: Any, args: dict[str, Any]) -> _Completion:
    """A non-streamed chat completion, posted through the client and read with ``orjson``.

    ``chat.completions.create`` walks the request through the package's typed transforms and
    builds pydantic models of the whole answer: 1.36 ms of client CPU per call, 0.98 ms posting
    the same body with the client's own ``post`` and reading three fields
    (``bench/bench_llm_client.py --only-chat-parsing``: 400 calls at concurrency 25, load ~1). The URL (Azure deployments
    included), headers, timeouts and HTTP error classes are the client's, as before; a body that
    is not a completion raises :class:`MalformedResponse` or a JSON error, both retried.
    """
    raw = await client.post("/chat/completions", body=args, cast_to=object, options=_RAW_RESPONSE)
    body = orjson.loads(raw.content)
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("the response has no choices")
    message = choices[0].get("message") or {}
    usage = body.get("usage")
    return _Completion(
        message.get("content") or "", choices[0].get("finish_reason"), usage if isinstance(usage, dict) else None
    )


def _whole(options: ChatOptions, text: str) -> bool:
    """Whether the call's own test (``complete_if``) takes the answer as finished (no test: yes)."""
    return options.complete_if is None or options.complete_if(text)


def _field(record: Any, name: str) -> Any:
    """A field of usage as a parsed body (a mapping) or as the client's model (a streamed chunk's)."""
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name, None)


@dataclass(frozen=True)
class ChatDefaults:
    """The model's settings: its temperature, and whether JSON calls may send ``response_format``."""

    temperature: float = 0.0
    json_mode: bool = True


@dataclass
class _Call:
    """One logical chat call while it is being adapted to the server."""

    messages: list[dict[str, str]]
    options: ChatOptions
    temperature: float
    streaming: bool = False
    plain_json: bool = False  # send no response_format for this call only
    shrinks: int = 0


class OpenAIChatModel(OpenAIModel):
    """:class:`~graphrag_assets.llm.types.ChatModel` on an OpenAI-compatible endpoint."""

    what = "chat"

    def __init__(
        self, model: str, endpoint: Endpoint, services: ModelServices, defaults: ChatDefaults = ChatDefaults()
    ) -> None:
        super().__init__(model, endpoint, services)
        self.defaults = defaults

    async def chat(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> ChatResult:
        opts = options or DEFAULT_CHAT_OPTIONS
        call = self._new_call(messages, opts)
        cache = self.cache if opts.use_cache else None
        key = chat_cache_key(
            model=self.model,
            messages=call.messages,
            temperature=call.temperature,
            max_tokens=opts.max_tokens,
            json_mode=opts.wants_json and self.defaults.json_mode,
            prompt_version=opts.prompt_version,
        )
        if cache is not None:
            hit = await cache.get_chat(key)
            if hit is not None:  # cleaned again: answers cached before cleaning existed may hold <think>
                self.meter.record_cache_hits(purpose, self.model)
                if not self.dry_run:
                    cache.note_use(CHAT_TABLE, [key])
                return ChatResult(
                    self._clean(hit.text, call, {}), hit.prompt_tokens, hit.completion_tokens, cached=True
                )
        if self.dry_run:
            return self._dry_run_chat(purpose, call)
        if not opts.use_cache:  # the caller wants a fresh answer: no sharing with identical calls either
            return await self._complete(purpose, call)
        in_flight = (await self.loop_state()).in_flight
        twin = in_flight.get(key)
        if twin is not None:  # an identical call is already on its way: share its answer
            result = await asyncio.shield(twin)
            self.meter.record_cache_hits(purpose, self.model)
            if cache is not None:
                cache.note_use(CHAT_TABLE, [key])
            return ChatResult(result.text, result.prompt_tokens, result.completion_tokens, cached=True)
        future: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # mark as retrieved
        in_flight[key] = future
        try:
            result = await self._complete(purpose, call)
            if (
                cache is not None
                and result.text
                and not result.truncated
                and (opts.cache_if is None or opts.cache_if(result.text))
            ):
                cache.put_chat(
                    key,
                    model=self.model,
                    purpose=purpose,
                    text=result.text,
                    prompt_tokens=result.prompt_tokens,
                    completion_tokens=result.completion_tokens,
                )
                cache.note_use(CHAT_TABLE, [key])
                await cache.commit()  # on disk before anyone uses it: a kill loses only calls in flight
            future.set_result(result)
            return result
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
            raise
        finally:
            in_flight.pop(key, None)

    async def stream(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> AsyncIterator[str]:
        """Yield the answer's text as it arrives (never cached).

        Failures before the first piece are retried like any call; a failure after text has been
        yielded raises :class:`LLMError` (repeating would duplicate what the caller already has).
        """
        call = self._new_call(messages, options or DEFAULT_CHAT_OPTIONS)
        call.streaming = True
        if self.dry_run:
            self._dry_run_chat(purpose, call)
            return
        state = await self.loop_state()
        hooks = self.retry_hooks(purpose)
        estimated = self._estimate(call)

        async def open_stream() -> tuple[Any, dict[str, Any]]:
            if self.limiter is not None:
                await self.limiter.acquire(estimated)
            return await self.reach(lambda client: self._create(client, call), state.client)

        think = ThinkFilter()
        pieces: list[str] = []
        usage = None
        async with state.semaphore:
            stream, args = await call_with_retries(open_stream, self.services.limits.retry_policy, hooks, self._rng)
            failure: Failure | None = None
            try:
                async for chunk in stream:
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage
                    for choice in chunk.choices or []:
                        piece = choice.delta.content if choice.delta is not None else None
                        if piece:
                            pieces.append(piece)
                            shown = think.feed(piece)
                            if shown:
                                yield shown
            except Exception as exc:
                failure = classify(exc)
                if failure is None:
                    raise
            finally:
                await stream.close()
            if failure is not None:  # raised outside the except block: no __context__ to leak
                raise hooks.give_up(failure, 1)
            rest = think.finish()
            if rest:
                yield rest
        if think.stripped:
            self._noticed_think()
        if "stream_options" in args and self.capabilities.stream_usage == UNKNOWN:
            reported = usage is not None
            self.learn(
                "stream_usage_" + ("reported" if reported else "missing"),
                "",
                stream_usage="honoured" if reported else "ignored",
            )
        self._record(purpose, call, usage, "".join(pieces))

    # -- building and adapting requests ------------------------------------------------------------
    def _new_call(self, messages: Sequence[Message], options: ChatOptions) -> _Call:
        temperature = self.defaults.temperature if options.temperature is None else float(options.temperature)
        return _Call([{"role": m["role"], "content": m["content"]} for m in messages], options, temperature)

    def _request_args(self, call: _Call, caps: Capabilities) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": call.messages}
        if caps.temperature:
            args["temperature"] = call.temperature
        if call.options.max_tokens is not None:
            args[caps.token_limit_parameter] = call.options.max_tokens
        response_format = self._response_format(call, caps)
        if response_format is not None:
            args["response_format"] = response_format
        if call.streaming:
            args["stream"] = True
            if caps.stream_usage != "rejected":
                args["stream_options"] = {"include_usage": True}
        return args

    def _response_format(self, call: _Call, caps: Capabilities) -> dict[str, Any] | None:
        if not (call.options.wants_json and self.defaults.json_mode) or call.plain_json:
            return None
        schema = call.options.json_schema
        if schema is not None and caps.json_schema != "rejected":
            return {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": dict(schema.schema), "strict": True},
            }
        if caps.json_object != "rejected":
            return {"type": "json_object"}
        return None

    async def _create(self, client: Any, call: _Call) -> tuple[Any, dict[str, Any]]:
        """Send the call, changing it while the server refuses a part it can do without."""
        adaptations = 0
        while True:
            args = self._request_args(call, self.capabilities)
            try:
                if call.streaming:
                    return await client.chat.completions.create(**args), args
                return await _post_completion(client, args), args
            except Exception as exc:
                failure = classify(exc)
                adaptations += 1
                if failure is None or adaptations > MAX_ADAPTATIONS or not self._adapt(failure, call, args):
                    raise

    def _adapt(self, failure: Failure, call: _Call, args: dict[str, Any]) -> bool:
        """Change ``call`` (or what is known about the server) after a refusal; False if nothing helps."""
        if failure.kind == "context_length":
            return self._shorten(call, failure)
        if failure.kind not in ("bad_request", "unprocessable"):
            return False
        detail = failure.detail
        me = self.describe()
        # Each branch records the refusal; the request is then rebuilt from what is known, which
        # no longer includes the refused part (also when a concurrent call recorded it first).
        if "max_tokens" in args and "max_completion_tokens" in detail:
            self.learn(
                "max_tokens_refused",
                f"{me} refuses max_tokens; sending max_completion_tokens instead.",
                token_limit_parameter="max_completion_tokens",
            )
        elif "max_completion_tokens" in args and "max_completion_tokens" in detail and _UNSUPPORTED.search(detail):
            self.learn(
                "max_completion_tokens_refused",
                f"{me} does not know max_completion_tokens; sending max_tokens instead.",
                token_limit_parameter="max_tokens",
            )
        elif "temperature" in args and "temperature" in detail.lower():
            self.learn(
                "temperature_refused",
                f"{me} accepts only its default temperature; llm.temperature is not sent to it.",
                temperature=False,
            )
        elif "stream_options" in args and "stream_options" in detail:
            self.learn(
                "stream_options_refused",
                f"{me} refuses stream_options; streamed answers are counted with the tokenizer.",
                stream_usage="rejected",
            )
        elif "response_format" in args and _NEEDS_JSON_WORD.search(detail):
            call.plain_json = True  # OpenAI wants the word "json" in a json_object prompt: this one lacks it
        elif "response_format" in args and _RESPONSE_FORMAT.search(detail):
            kind = args["response_format"]["type"]
            fallback = "json_object" if kind == "json_schema" else "the prompt's instructions and JSON repair"
            self.learn(
                f"{kind}_refused",
                f"{me} refuses response_format {kind}; using {fallback} instead.",
                **{kind: "rejected"},
            )
        else:
            return False
        return True

    def _shorten(self, call: _Call, failure: Failure) -> bool:
        if call.shrinks >= MAX_SHRINKS:
            return False
        overflow = parse_overflow(failure.detail)
        ours = sum(self.count(m["content"]) for m in call.messages)
        target = min(target_tokens(overflow, ours, call.options.max_tokens), int(ours * SHRINK_AT_LEAST))
        shorter = shrink_messages(call.messages, target, self.encoding)
        if shorter is None:
            return False
        call.messages = shorter
        call.shrinks += 1
        self.meter.note(self.model, "prompts_shortened")
        window = f" of {overflow.window:,} tokens" if overflow.window else ""
        if overflow.window:
            self.services.capabilities.update(self.key, context_window=overflow.window)
        self.tell_once(
            "prompts_shortened",
            f"prompts for {self.describe()} exceed its context window{window}; they are "
            "shortened to fit (raise the server's context length to keep them whole).",
        )
        return True

    # -- reading answers -------------------------------------------------------------------------
    async def _complete(self, purpose: str, call: _Call) -> ChatResult:
        response, args = await self.send(purpose, lambda client: self._create(client, call), self._estimate(call))
        finish_reason = response.finish_reason
        text = self._clean(response.content, call, args, finish_reason in (None, "stop"))
        if finish_reason == "content_filter":
            self.meter.note(self.model, "answers_filtered")
            self.tell_once(
                "answers_filtered",
                f"{self.describe()} withheld answers with finish_reason content_filter "
                "(its content filter); those calls return no text.",
            )
        result = self._record(purpose, call, response.usage, text)
        if finish_reason == "length":
            self.tell_once(
                "answers_truncated",
                f"{self.describe()} cut answers off at the token limit (finish_reason length); "
                "they are used as they are but not cached, so the next index asks again (raise max_tokens if it keeps happening).",
            )
        elif finish_reason != "content_filter" and text and not _whole(call.options, text):
            self.meter.note(self.model, "answers_cut_short")
            self.tell_once(
                "answers_cut_short",
                f"{self.describe()} ended answers in the middle of a record although it reported them finished; "
                "they are used as they are but not cached, so the next index asks again.",
            )
        else:
            return result
        self.meter.record_truncated(purpose, self.model)
        return dataclasses.replace(result, truncated=True)

    def _clean(self, text: str, call: _Call, args: dict[str, Any], complete: bool = True) -> str:
        """The answer without its <think> block, repaired into JSON when JSON was asked for.

        Whether the server follows ``response_format`` is judged only on a complete answer (one
        cut by the token limit is not valid JSON whatever the server does)."""
        text, stripped = strip_think(text)
        if stripped:
            self._noticed_think()
        if not call.options.wants_json or not text.strip():
            return text
        repaired = repair_json_answer(text)
        kind = (args.get("response_format") or {}).get("type")
        if kind is not None and complete and getattr(self.capabilities, kind) == UNKNOWN:
            honoured = repaired is None
            self.learn(
                f"{kind}_{'honoured' if honoured else 'ignored'}",
                ""
                if honoured
                else f"{self.describe()} accepts response_format {kind} but does not follow it; answers are repaired into JSON.",
                **{kind: "honoured" if honoured else "ignored"},
            )
        if repaired is None:
            return text
        self.meter.note(self.model, "json_repaired")
        return repaired

    def _noticed_think(self) -> None:
        self.meter.note(self.model, "think_blocks_stripped")
        self.learn(
            "think_blocks",
            f"{self.describe()} puts a <think> block before its answers; it is removed before parsing.",
            think_blocks=True,
        )

    def _record(self, purpose: str, call: _Call, usage: Any, text: str) -> ChatResult:
        if usage is not None and _field(usage, "prompt_tokens") is not None:
            prompt_tokens, completion_tokens = (
                int(_field(usage, "prompt_tokens")),
                int(_field(usage, "completion_tokens") or 0),
            )
            details = _field(usage, "completion_tokens_details")
            reasoning = _field(details, "reasoning_tokens") if details is not None else None
            if reasoning:
                self.meter.note(self.model, "reasoning_tokens", int(reasoning))
        else:  # the server reports nothing: count ourselves
            prompt_tokens = sum(self.count(m["content"]) for m in call.messages)
            completion_tokens = self.count(text)
        return self._charged(purpose, text, prompt_tokens, completion_tokens)

    def _dry_run_chat(self, purpose: str, call: _Call) -> ChatResult:
        prompt_tokens = sum(self.count(m["content"]) for m in call.messages)
        completion_tokens = call.options.max_tokens or DRY_RUN_COMPLETION_TOKENS
        return self._charged(purpose, "", prompt_tokens, completion_tokens)

    def _charged(self, purpose: str, text: str, prompt_tokens: int, completion_tokens: int) -> ChatResult:
        """The uncached result, after metering the request and its estimated cost (a dry run
        meters what the real call would have cost, the same way)."""
        self.meter.record_request(
            purpose,
            self.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=estimate_cost(self.services.prices, self.model, prompt_tokens, completion_tokens),
        )
        return ChatResult(text, prompt_tokens, completion_tokens, cached=False)

    def _estimate(self, call: _Call) -> int:
        if self.limiter is None or not self.limiter.tokens_per_minute:
            return 0
        return sum(self.count(m["content"]) for m in call.messages) + (call.options.max_tokens or 0)
