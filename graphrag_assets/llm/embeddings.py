""":class:`~graphrag_assets.llm.types.EmbeddingModel` on any OpenAI-compatible endpoint.

Texts are deduplicated, looked up in the cache, and the rest sent in batches (by count and by
tokens) that run concurrently. A text longer than ``batch_max_tokens`` is embedded in pieces of
that size whose vectors are averaged (weighted by tokens) and re-normalized, since endpoints
reject over-long inputs. An empty text is sent as a single space, which endpoints accept.

Vectors are asked for as base64 strings of little-endian float32 (``encoding_format: base64``,
what OpenAI's own SDKs send): the body is about a quarter of the size of float lists and decodes
in microseconds instead of walking thousands of JSON numbers. Servers differ here:

- one that ignores ``encoding_format`` answers with float lists, and one that answers base64
  whatever is asked exists too: both forms are read, whatever was asked;
- one that refuses it (HTTP 400/422 naming ``encoding_format`` or base64) is asked again for
  ``float`` (named: the ``openai`` package sends base64 when the parameter is left out), and that
  is remembered in :mod:`.capabilities` like any other adaptation, so the refusal is paid once per
  endpoint and model;
- one whose base64 path fails with HTTP 500 (tabbyAPI before its fix raised on it) is treated the
  same way, but only while base64 was never answered by that endpoint and model: a first request
  that fails with 500 is asked again for ``float`` at once. A server that fails its very first
  request for another reason (and then answers floats) is thereby kept on floats, which every
  server answers;
- ``llm.embedding_dimensions`` is sent as ``dimensions``; a server that refuses it is asked again
  without it, and one that ignores it is noticed by the length of what it returns; either way its
  own dimension is used and the user is told once.

Vectors stay float32 (views of the decoded bytes, see :mod:`graphrag_assets.core.float32`) from
the decoded body to the caller and the response cache: what they end up as (DuckDB ``FLOAT[n]``,
LanceDB float32) holds no more precision, and a list of 1,536 Python floats per text costs far
more to build and to convert again than the bytes.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from array import array
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from graphrag_assets.core.float32 import Vector, from_le_bytes, weighted_unit_mean, zeros
from graphrag_assets.core.tokens import get_tokenizer
from graphrag_assets.llm.cache import EMBEDDING_TABLE, embedding_cache_key
from graphrag_assets.llm.capabilities import UNKNOWN
from graphrag_assets.llm.client import Endpoint, ModelServices, OpenAIModel
from graphrag_assets.llm.retry import Failure, MalformedResponse, classify
from graphrag_assets.llm.usage import estimate_cost

KNOWN_EMBEDDING_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
DEFAULT_EMBEDDING_DIMENSION = 1536
_DIMENSIONS = re.compile(r"dimension|matryoshka", re.I)
_ENCODING_FORMAT = re.compile(r"encoding_format|base64", re.I)
_REFUSALS = ("bad_request", "unprocessable")
MAX_ADAPTATIONS = 2  # encoding_format and dimensions: each can be refused once


@dataclass(frozen=True)
class EmbeddingBatching:
    """How texts are grouped into requests, and the vector size asked for (None: the model's)."""

    batch_size: int = 16
    batch_max_tokens: int = 8191
    dimensions: int | None = None


def plan_batches(token_counts: Sequence[int], batch_size: int, batch_max_tokens: int) -> list[list[int]]:
    """Group input positions, in order, into batches of at most ``batch_size`` items and
    ``batch_max_tokens`` tokens (an item larger than the token budget travels alone)."""
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for index, count in enumerate(token_counts):
        if current and (len(current) >= batch_size or tokens + count > batch_max_tokens):
            batches.append(current)
            current, tokens = [], 0
        current.append(index)
        tokens += count
    if current:
        batches.append(current)
    return batches


async def _post_embeddings(client: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The answer to an embeddings request as the JSON object the server sent.

    Read from the raw response rather than the ``openai`` package's parsed model: building that
    model walks every number of every vector through its type machinery: 2.2 ms of client CPU per
    1,000 numbers, against 0.45 ms reading the body with ``json`` and 0.27 ms with ``orjson``
    (bench/bench_embedding_parse.py, load 8); it was the largest single item of a cold index's
    CPU time at 1,536 dimensions. Errors (HTTP status, connection) are raised by the client
    exactly as before.
    """
    raw = await client.embeddings.with_raw_response.create(**args)
    body = orjson.loads(raw.content)  # raises a json.JSONDecodeError (retried) on a malformed body
    if not isinstance(body, dict):
        raise MalformedResponse("the embeddings response is not a JSON object")
    return body


def _is_embedding_item(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("embedding"), (list, str))


def decode_vector(value: Any) -> tuple[Vector, bool]:
    """A float32 vector from a float list or a base64 string of little-endian float32; and whether
    it was base64. A value that is neither raises :class:`MalformedResponse` (retried)."""
    try:
        if isinstance(value, str):
            return from_le_bytes(base64.b64decode(value)), True
        return array("f", value), False
    except (ValueError, TypeError, OverflowError, binascii.Error) as exc:
        if isinstance(value, list) and any(isinstance(item, list) for item in value):
            raise MalformedResponse("an embedding is not a flat list of numbers") from None
        raise MalformedResponse(f"an embedding is neither base64 float32 nor a list of numbers ({exc})") from None


class OpenAIEmbeddingModel(OpenAIModel):
    """:class:`~graphrag_assets.llm.types.EmbeddingModel` on an OpenAI-compatible endpoint."""

    what = "embedding"
    model_setting = "llm.embedding_model"
    url_setting = "llm.embedding_base_url"

    def __init__(
        self, model: str, endpoint: Endpoint, services: ModelServices, batching: EmbeddingBatching = EmbeddingBatching()
    ) -> None:
        super().__init__(model, endpoint, services)
        self.batching = batching
        self._dimension: int | None = None

    def _pieces(self, text: str) -> list[tuple[str, int]]:
        tokenizer = get_tokenizer(self.encoding)
        tokens = tokenizer.encode_ordinary(text)
        if not tokens:
            return [(" ", 1)]
        step = self.batching.batch_max_tokens
        if len(tokens) <= step:
            return [(text, len(tokens))]
        return [
            (tokenizer.decode(tokens[i : i + step]), len(tokens[i : i + step])) for i in range(0, len(tokens), step)
        ]

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[Vector]:
        texts = list(texts)
        if not texts:
            return []
        unique = list(dict.fromkeys(texts))
        keys = {text: embedding_cache_key(model=self.model, text=text) for text in unique}
        vectors: dict[str, Vector] = {}
        if self.cache is not None:
            found = await self.cache.get_embeddings(list(keys.values()))
            vectors = {text: found[key] for text, key in keys.items() if key in found}
            if vectors:
                self.meter.record_cache_hits(purpose, self.model, len(vectors))
                self._dimension = self._dimension or len(next(iter(vectors.values())))
        missing = [text for text in unique if text not in vectors]
        if missing:
            vectors.update(await self._embed_missing(purpose, missing, keys))
        if self.cache is not None and not self.dry_run:
            self.cache.note_use(EMBEDDING_TABLE, keys.values())
        return [vectors[text] for text in texts]

    def _dry_run(
        self, purpose: str, texts: list[str], batches: list[list[int]], pieces: list[tuple[int, str, int]]
    ) -> dict[str, Vector]:
        for batch in batches:
            tokens = sum(pieces[i][2] for i in batch)
            self.meter.record_request(
                purpose,
                self.model,
                embedding_tokens=tokens,
                cost_usd=estimate_cost(self.services.prices, self.model, tokens),
            )
        dim = (
            self._dimension
            or self.batching.dimensions
            or KNOWN_EMBEDDING_DIMENSIONS.get(self.model, DEFAULT_EMBEDDING_DIMENSION)
        )
        return {text: zeros(dim) for text in texts}

    async def _embed_missing(self, purpose: str, texts: list[str], keys: Mapping[str, str]) -> dict[str, Vector]:
        pieces: list[tuple[int, str, int]] = []  # (text position, piece text, tokens)
        for position, text in enumerate(texts):
            pieces.extend((position, piece, tokens) for piece, tokens in self._pieces(text))
        batches = plan_batches([p[2] for p in pieces], self.batching.batch_size, self.batching.batch_max_tokens)
        if self.dry_run:
            return self._dry_run(purpose, texts, batches, pieces)

        piece_vectors: dict[int, Vector] = {}
        remaining = [0] * len(texts)
        for position, _, _ in pieces:
            remaining[position] += 1
        pieces_of: dict[int, list[int]] = {}
        for index, (position, _, _) in enumerate(pieces):
            pieces_of.setdefault(position, []).append(index)
        results: dict[str, Vector] = {}

        async def run(batch: list[int]) -> None:
            inputs = [pieces[i][1] for i in batch]
            embedded, reported = await self.send(purpose, self._request(inputs), sum(pieces[i][2] for i in batch))
            tokens = reported if reported is not None else sum(pieces[i][2] for i in batch)
            self.meter.record_request(
                purpose,
                self.model,
                embedding_tokens=tokens,
                cost_usd=estimate_cost(self.services.prices, self.model, tokens),
            )
            finished: dict[str, Vector] = {}
            for index, vector in zip(batch, embedded):
                piece_vectors[index] = vector
                position = pieces[index][0]
                remaining[position] -= 1
                if remaining[position] == 0:
                    own = pieces_of[position]
                    vec = (
                        piece_vectors[own[0]]
                        if len(own) == 1
                        else weighted_unit_mean([piece_vectors[i] for i in own], [pieces[i][2] for i in own])
                    )
                    results[texts[position]] = vec
                    finished[keys[texts[position]]] = vec
            if finished and self.cache is not None:
                self.cache.put_embeddings(self.model, finished)
                await self.cache.commit()  # on disk before they are used (llm/cache.py)

        await asyncio.gather(*(run(batch) for batch in batches))
        if results:
            self._dimension = self._dimension or len(next(iter(results.values())))
        return results

    def _args(self, inputs: list[str]) -> dict[str, Any]:
        caps = self.capabilities
        # refused: floats, by name (see the module docstring)
        base64_ok = caps.encoding_format != "rejected"
        args: dict[str, Any] = {
            "model": self.model,
            "input": inputs,
            "encoding_format": "base64" if base64_ok else "float",
        }
        if self.batching.dimensions and caps.dimensions != "rejected":
            args["dimensions"] = self.batching.dimensions
        return args

    async def _create(self, client: Any, inputs: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Send the request, changing it while the server refuses a part it can do without."""
        adaptations = 0
        while True:
            args = self._args(inputs)
            try:
                return await _post_embeddings(client, args), args
            except Exception as exc:
                adaptations += 1
                if adaptations > MAX_ADAPTATIONS or not self._adapt(classify(exc), args):
                    raise

    def _adapt(self, failure: Failure | None, args: dict[str, Any]) -> bool:
        """Record a refusal (or a first failure, see the module docstring) of ``encoding_format``, or
        a refusal of ``dimensions``; False when it is something else.
        The request is then rebuilt from what is known, which no longer includes the refused part."""
        if failure is None:
            return False
        if (
            failure.kind == "server_error"
            and failure.status == 500
            and args["encoding_format"] == "base64"
            and self.capabilities.encoding_format in (UNKNOWN, "rejected")
        ):  # rejected: by a concurrent batch
            self.learn("base64_failed", "", encoding_format="rejected")  # see the module docstring
            return True
        if failure.kind not in _REFUSALS:
            return False
        if args["encoding_format"] == "base64" and _ENCODING_FORMAT.search(failure.detail):
            self.learn("base64_refused", "", encoding_format="rejected")  # nothing for the user to do: only counted
        elif "dimensions" in args and _DIMENSIONS.search(failure.detail):
            self.learn(
                "dimensions_refused",
                f"{self.describe()} refuses the dimensions parameter; its vectors keep their own size "
                "(unset llm.embedding_dimensions to silence this).",
                dimensions="rejected",
            )
        else:
            return False
        return True

    def _request(self, inputs: list[str]) -> Callable[[Any], Awaitable[tuple[list[Vector], int | None]]]:
        async def request(client: Any) -> tuple[list[Vector], int | None]:
            body, args = await self._create(client, inputs)
            data = body.get("data")
            if (
                not isinstance(data, list)
                or len(data) != len(inputs)
                or not all(_is_embedding_item(item) for item in data)
            ):
                raise MalformedResponse(
                    f"expected {len(inputs)} embeddings, got {len(data) if isinstance(data, list) else 0}"
                )
            decoded = [decode_vector(item["embedding"]) for item in sorted(data, key=lambda item: item.get("index", 0))]
            self._notice(args, decoded)
            usage = body.get("usage")
            reported = usage.get("prompt_tokens") if isinstance(usage, dict) else None
            return [vector for vector, _ in decoded], reported

        return request

    def _notice(self, args: dict[str, Any], decoded: list[tuple[Vector, bool]]) -> None:
        """Record what the answer shows about the server: base64 vectors (asked for or not),
        ``dimensions`` followed or not."""
        base64_seen = any(was_base64 for _, was_base64 in decoded)
        if base64_seen:
            self.learn("base64_embeddings", "", base64_embeddings=True)
        if args["encoding_format"] == "base64" and self.capabilities.encoding_format == UNKNOWN:
            self.learn(
                "base64_" + ("honoured" if base64_seen else "ignored"),
                "",
                encoding_format="honoured" if base64_seen else "ignored",
            )
        wanted = args.get("dimensions")
        if wanted is None or self.capabilities.dimensions != UNKNOWN:
            return
        size = len(decoded[0][0])
        if size == wanted:
            self.learn("dimensions_honoured", "", dimensions="honoured")
        else:
            self.learn(
                "dimensions_ignored",
                f"{self.describe()} ignores the dimensions parameter and returns {size} "
                f"dimensions instead of {wanted}; its vectors are used as they are.",
                dimensions="ignored",
            )
