"""A scripted OpenAI-compatible HTTP server for tests and benchmarks (standard library only).

It runs as a separate process so that the real ``openai`` client (its HTTP stack, error mapping and
response parsing) is exercised over loopback::

    python -m graphrag_assets_testkit.openai_server --port 0 --port-file /tmp/port [--latency-ms 50]
        [--responder pkg.module:function] [--embedding-dim 64]
        [--profile openai|reasoning|azure|ollama|vllm|no-dimensions|base64|float-only] [--api-key KEY]
        [--load-seconds 1.5] [--profile-option name=value]

``--profile`` makes the server behave like one kind of real server (OpenAI reasoning models, Azure
OpenAI, Ollama, vLLM, embeddings endpoints without ``dimensions``, with base64 vectors only or
with float vectors only): see :mod:`.server_profiles`. The default, ``openai``, is well behaved and checks nothing; with
``--api-key`` a profile refuses other keys the way its server does.

Model endpoints: ``POST /v1/chat/completions`` (plain or ``stream: true`` as server-sent events,
with ``stream_options.include_usage``), ``POST /v1/embeddings`` and ``GET /v1/models``; Azure
deployment paths (``/openai/deployments/<name>/chat/completions?api-version=...``) work too.

What a chat request is answered with, in order:

1. scripted rules (``/_control/rule``): a regex searched in the concatenated message contents, first
   match wins, each rule optionally limited to N uses;
2. the responder: ``module:function`` receiving the parsed request body (dict) and returning the
   answer text; the default echoes the last user message (``"echo: "`` + its first 200 characters).

Faults (``/_control/fault``) are consumed in the order they were added by the next matching model
requests: an HTTP status with an OpenAI-style error body and optional ``Retry-After`` /
``retry-after-ms`` headers, a delay before answering normally (to trigger client timeouts), a
malformed body (invalid JSON with status 200), an answer cut off at the token limit (``truncate``:
``keep_chars`` characters, ``finish_reason: length``, or another ``finish_reason`` such as the
``stop`` a faulty server or proxy reports), or a dropped connection (socket closed without a
response). A fault may be limited to one endpoint and to requests whose text matches a regex.

Usage figures are approximate but realistic: tokens are counted with
``graphrag_assets.core.tokens.count_tokens`` (cl100k_base, offline fallback); a chat prompt costs the
tokens of every message's content plus 4 per message plus 3 for the reply priming (the overhead
OpenAI documents for its chat format), so the numbers differ from a plain count of the text.

Embeddings are deterministic and mildly meaningful: each lower-cased word is hashed (SHA-256) to a
dimension and a sign (feature hashing), plus a small component hashed from the whole text so that
no vector is zero, then the vector is L2-normalized. Texts sharing words are therefore similar,
which keeps retrieval tests meaningful without a real model. Like OpenAI, the server answers with
float lists unless the request asks for ``encoding_format: base64`` (little-endian float32,
base64-encoded; what the ``openai`` SDKs ask for by default and our embedder asks for). Microsoft
GraphRAG calls through LiteLLM, which asks for ``float`` unless its environment says otherwise, so
``bench/msgraphrag_compare.py`` serves it float lists, as OpenAI would.

Control endpoints (JSON in, JSON out): ``POST /_control/reset``, ``POST /_control/rule``,
``POST /_control/fault``, ``POST /_control/latency``, ``POST /_control/chunk_delay`` (``{"ms"}`` between
streamed pieces, as a model writes), ``GET /_control/calls[?endpoint=chat]``,
``GET /_control/stats``. Every model request is recorded with its endpoint, arrival time, body,
selected headers and outcome (``answered`` or the fault kind).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import json
import math
import os
import re
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from graphrag_assets_testkit.server_profiles import Profile, Reply, Route, make_profile

Responder = Callable[[dict[str, Any]], str]

FAULT_KINDS = ("status", "delay", "malformed", "drop", "truncate")
RECORDED_HEADERS = ("authorization", "api-key", "user-agent", "content-type")
_WORD = re.compile(r"\w+", re.UNICODE)


def echo_responder(body: dict[str, Any]) -> str:
    """Default answer: ``"echo: "`` followed by the first 200 characters of the last user message."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    last = message_text(users[-1]) if users else ""
    return "echo: " + last[:200]


def shouting_responder(body: dict[str, Any]) -> str:
    """An example custom responder (``--responder graphrag_assets_testkit.openai_server:shouting_responder``)."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return "SHOUT " + (message_text(users[-1]).upper() if users else "")


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of content parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def request_text(endpoint: str, body: dict[str, Any]) -> str:
    """What rules and fault filters are matched against: message contents or embedding inputs."""
    if endpoint == "chat":
        return "\n".join(message_text(m) for m in body.get("messages") or [])
    if endpoint == "embeddings":
        inputs = body.get("input")
        if isinstance(inputs, str):
            return inputs
        if isinstance(inputs, list):
            return "\n".join(x for x in inputs if isinstance(x, str))
    return ""


def load_responder(spec: str | None) -> Responder:
    if not spec:
        return echo_responder
    module_name, _, function_name = spec.partition(":")
    if not function_name:
        raise SystemExit(f"--responder must look like package.module:function, got {spec!r}")
    return getattr(importlib.import_module(module_name), function_name)


class TokenCounter:
    """count_tokens from the product when importable (it is, in this repository), else len/4."""

    def __init__(self) -> None:
        try:
            from graphrag_assets.core.tokens import count_tokens

            count_tokens("warm up")
            self._count: Callable[[str], int] = count_tokens
        except Exception:  # pragma: no cover - only outside the repository
            self._count = lambda text: max(1, math.ceil(len(text) / 4)) if text else 0

    def __call__(self, text: str) -> int:
        return self._count(text)


def embedding_vector(text: str, dim: int) -> list[float]:
    """Feature-hashed bag of words plus a whole-text component, L2-normalized (see module doc)."""
    vec = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vec[index] += 1.0 if digest[4] & 1 else -1.0
    seed = hashlib.sha256(b"text:" + text.encode("utf-8")).digest()
    block = b""
    counter = 0
    while len(block) < 4 * dim:
        block += hashlib.sha256(seed + counter.to_bytes(4, "little")).digest()
        counter += 1
    for i in range(dim):
        (raw,) = struct.unpack_from("<I", block, 4 * i)
        vec[i] += 0.1 * (raw / 2**31 - 1.0)
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


@dataclass
class Rule:
    pattern: re.Pattern[str]
    reply: str
    remaining: int | None


@dataclass
class Fault:
    kind: str
    status: int = 500
    body: Any = None
    retry_after: str | None = None
    retry_after_ms: str | None = None
    seconds: float = 0.0
    match: re.Pattern[str] | None = None
    endpoint: str | None = None
    remaining: int = 1
    keep_chars: int = 40  # kind "truncate": characters of the answer sent before it is cut off
    finish_reason: str = "length"  # kind "truncate": what the cut answer says (a faulty server says "stop")


@dataclass
class ServerState:
    responder: Responder
    embedding_dim: int
    latency_ms: float = 0.0
    chunk_delay_ms: float = 0.0
    profile: Profile = field(default_factory=Profile)
    rules: list[Rule] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.rules.clear()
            self.faults.clear()
            self.calls.clear()
            self.counts.clear()
            self.chunk_delay_ms = 0.0
            self.max_in_flight = self.in_flight

    def take_fault(self, endpoint: str, text: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.endpoint and fault.endpoint != endpoint:
                    continue
                if fault.match and not fault.match.search(text):
                    continue
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self.faults.remove(fault)
                return fault
        return None

    def take_rule(self, text: str) -> str | None:
        with self.lock:
            for rule in self.rules:
                if rule.pattern.search(text):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                        if rule.remaining <= 0:
                            self.rules.remove(rule)
                    return rule.reply
        return None


def _parse_fault(spec: dict[str, Any]) -> Fault:
    kind = spec.get("kind")
    if kind not in FAULT_KINDS:
        raise ValueError(f"fault kind must be one of {FAULT_KINDS}, got {kind!r}")
    status = int(spec.get("status") or 500)
    body = spec.get("body")
    if body is None and kind == "status":
        message = spec.get("message") or f"scripted failure with status {status}"
        body = {"error": {"message": message, "type": "scripted_error", "param": None, "code": str(status)}}
    return Fault(
        kind=kind,
        status=status,
        body=body,
        retry_after=None if spec.get("retry_after") is None else str(spec["retry_after"]),
        retry_after_ms=None if spec.get("retry_after_ms") is None else str(spec["retry_after_ms"]),
        seconds=float(spec.get("seconds") or 0.0),
        match=re.compile(spec["match"], re.S) if spec.get("match") else None,
        endpoint=spec.get("endpoint"),
        remaining=int(spec.get("times") or 1),
        keep_chars=int(spec.get("keep_chars") or 40),
        finish_reason=str(spec.get("finish_reason") or "length"),
    )


class ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    # -- plumbing -------------------------------------------------------------------------------
    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else {}

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self._send_raw(status, data, headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send_json(
            status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        )

    # -- routing --------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        url = urlparse(self.path)
        state = self.server.state
        if url.path.endswith("/models"):
            self._record_simple("models")
            route = state.profile.route(url.path, parse_qs(url.query), self.headers)
            if route.error is not None:
                self._reply(route.error)
            else:
                self._send_json(200, {"object": "list", "data": state.profile.model_list()})
        elif url.path == "/_control/calls":
            endpoint = (parse_qs(url.query).get("endpoint") or [None])[0]
            with state.lock:
                calls = [dict(c) for c in state.calls if endpoint in (None, c["endpoint"])]
            self._send_json(200, calls)
        elif url.path == "/_control/stats":
            with state.lock:
                stats = {
                    "counts": dict(state.counts),
                    "in_flight": state.in_flight,
                    "max_in_flight": state.max_in_flight,
                    "latency_ms": state.latency_ms,
                    "pending_faults": len(state.faults),
                    "pending_rules": len(state.rules),
                }
            self._send_json(200, stats)
        else:
            self._error(404, f"unknown path {url.path}")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        url = urlparse(self.path)
        try:
            body = self._read_json()
        except (ValueError, UnicodeDecodeError):
            self._error(400, "request body is not valid JSON")
            return
        if url.path.startswith("/_control/"):
            self._control(url.path.removeprefix("/_control/"), body)
            return
        route = self.server.state.profile.route(url.path, parse_qs(url.query), self.headers)
        if route.endpoint not in ("chat", "embeddings"):
            self._reply(route.error) if route.error is not None else self._error(404, f"unknown path {url.path}")
            return
        self._model_request(route, body)

    def _control(self, action: str, body: dict[str, Any]) -> None:
        state = self.server.state
        try:
            if action == "reset":
                state.reset()
            elif action == "rule":
                times = body.get("times")
                rule = Rule(
                    re.compile(body["pattern"], re.S), str(body["reply"]), None if times is None else int(times)
                )
                with state.lock:
                    state.rules.append(rule)
            elif action == "fault":
                fault = _parse_fault(body)
                with state.lock:
                    state.faults.append(fault)
            elif action == "latency":
                with state.lock:
                    state.latency_ms = float(body["ms"])
            elif action == "chunk_delay":
                with state.lock:
                    state.chunk_delay_ms = float(body["ms"])
            else:
                self._error(404, f"unknown control action {action}")
                return
        except (KeyError, ValueError, re.error) as exc:
            self._error(400, f"bad control request: {exc}")
            return
        self._send_json(200, {"ok": True})

    def _record_simple(self, endpoint: str) -> None:
        state = self.server.state
        with state.lock:
            state.counts[endpoint] = state.counts.get(endpoint, 0) + 1
            state.calls.append(
                {
                    "endpoint": endpoint,
                    "path": self.path,
                    "time": time.time(),
                    "body": {},
                    "headers": {},
                    "outcome": "answered",
                }
            )

    def _reply(self, reply: Reply) -> None:
        self._send_json(reply.status, reply.body, reply.headers)

    # -- model endpoints ------------------------------------------------------------------------
    def _refusal(self, route: Route, body: dict[str, Any], text: str) -> Reply | None:
        """The profile's error for this request, if its server would refuse it."""
        profile = self.server.state.profile
        if route.error is not None:
            return route.error
        refusal = profile.check_model(str(route.endpoint), route.model or str(body.get("model", "")))
        if refusal is None and route.endpoint == "chat":
            refusal = profile.check_chat(body, text, route)
        if refusal is None and route.endpoint == "embeddings":
            refusal = profile.check_embeddings(body)
        return refusal

    def _model_request(self, route: Route, body: dict[str, Any]) -> None:
        state = self.server.state
        endpoint = str(route.endpoint)
        record: dict[str, Any] = {
            "endpoint": endpoint,
            "path": self.path,
            "time": time.time(),
            "body": body,
            "headers": {h: self.headers[h] for h in RECORDED_HEADERS if self.headers.get(h) is not None},
            "outcome": "pending",
        }
        with state.lock:
            state.counts[endpoint] = state.counts.get(endpoint, 0) + 1
            state.calls.append(record)
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            latency = state.latency_ms
        try:
            if latency > 0:
                time.sleep(latency / 1000)
            text = request_text(endpoint, body)
            fault = state.take_fault(endpoint, text)
            if fault is not None:
                self._apply_fault(fault, endpoint, body, record)
                return
            refusal = self._refusal(route, body, text)
            if refusal is not None:
                record["outcome"], record["status"] = "refused", refusal.status
                self._reply(refusal)
                return
            if endpoint == "chat":
                self._chat(body, text, record)
            else:
                self._embeddings(body, record)
            record["outcome"] = "answered"
            record["answered_at"] = time.time()
        except (BrokenPipeError, ConnectionResetError):
            record["outcome"] = "client_gone"
            self.close_connection = True
        finally:
            with state.lock:
                state.in_flight -= 1

    def _apply_fault(self, fault: Fault, endpoint: str, body: dict[str, Any], record: dict[str, Any]) -> None:
        record["outcome"] = fault.kind
        if fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = fault.retry_after
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = fault.retry_after_ms
            record["status"] = fault.status
            payload = fault.body if isinstance(fault.body, (dict, list)) else None
            if payload is None:
                self._send_raw(fault.status, str(fault.body).encode("utf-8"), headers)
            else:
                self._send_json(fault.status, payload, headers)
        elif fault.kind == "delay":
            time.sleep(fault.seconds)
            if endpoint == "chat":
                self._chat(body, request_text(endpoint, body), record)
            else:
                self._embeddings(body, record)
        elif fault.kind == "truncate" and endpoint == "chat":
            self._chat(body, request_text(endpoint, body), record, cut=(fault.keep_chars, fault.finish_reason))
        elif fault.kind == "malformed":
            self._send_raw(200, b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"ind')
        elif fault.kind == "drop":
            self.close_connection = True

    def _chat(
        self, body: dict[str, Any], text: str, record: dict[str, Any], cut: tuple[int, str] | None = None
    ) -> None:
        server = self.server
        profile = server.state.profile
        model = body.get("model", "unknown")
        profile.wait_for_model(model)
        answer = server.state.take_rule(text)
        if answer is None:
            answer = server.state.responder(body)
        content = profile.shape_answer(body, answer)
        finish_reason = profile.finish_reason(body, answer)
        if cut is not None:  # the token limit was reached (or a faulty server stopped): the answer stops mid-way
            content, finish_reason = content[: cut[0]], cut[1]
        messages = body.get("messages") or []
        prompt_tokens = sum(server.count_tokens(message_text(m)) + 4 for m in messages) + 3
        completion_tokens = server.count_tokens(content)
        usage = profile.usage(
            body,
            {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        )
        ident = "chatcmpl-" + hashlib.sha256(f"{time.time_ns()}{threading.get_ident()}".encode()).hexdigest()[:24]
        created = int(time.time())
        record["usage"] = usage
        record["reply"] = content
        if body.get("stream"):
            self._stream_chat(ident, created, model, content, usage if profile.stream_usage(body) else None)
            return
        self._send_json(
            200,
            profile.decorate(
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content, "refusal": None},
                            "logprobs": None,
                            "finish_reason": finish_reason,
                        }
                    ],
                    "usage": usage,
                    "system_fingerprint": "scripted",
                }
            ),
        )

    def _stream_chat(self, ident: str, created: int, model: str, answer: str, usage: dict[str, Any] | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(
            delta: dict[str, Any], finish: str | None, with_usage: dict[str, int] | None = None, choices: bool = True
        ) -> None:
            payload: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
            }
            if usage is not None:
                payload["usage"] = with_usage
            self.wfile.write(b"data: " + json.dumps(payload).encode("utf-8") + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""}, None)
        for piece in re.findall(r"\S+\s*|\s+", answer):
            if self.server.state.chunk_delay_ms > 0:
                time.sleep(self.server.state.chunk_delay_ms / 1000)
            chunk({"content": piece}, None)
        chunk({}, "stop")
        if usage is not None:
            chunk({}, None, with_usage=usage, choices=False)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _embeddings(self, body: dict[str, Any], record: dict[str, Any]) -> None:
        server = self.server
        raw = body.get("input")
        inputs: list[Any] = (
            [raw]
            if isinstance(raw, str) or (isinstance(raw, list) and raw and isinstance(raw[0], int))
            else list(raw or [])
        )
        dim = server.state.profile.embedding_dim(body, server.state.embedding_dim)
        as_base64 = server.state.profile.base64(body)
        data = []
        tokens = 0
        for index, item in enumerate(inputs):
            if isinstance(item, list):  # token ids
                text = " ".join(str(t) for t in item)
                tokens += len(item)
            else:
                text = str(item)
                tokens += server.count_tokens(text)
            vector = embedding_vector(text, dim)
            embedding: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii") if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        record["usage"] = usage
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "unknown"),
                "usage": usage,
            },
        )


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], state: ServerState, verbose: bool = False) -> None:
        super().__init__(address, ScriptedHandler)
        self.state = state
        self.verbose = verbose
        self.count_tokens = TokenCounter()
        if hasattr(state.profile, "count_tokens"):
            state.profile.count_tokens = self.count_tokens


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible server for tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="written with the port number once listening")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--responder", default=None, help="package.module:function(body) -> str")
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--profile", default="openai", help="the kind of server to behave like (see server_profiles)")
    parser.add_argument(
        "--api-key", default=None, help="refuse requests without this key, the way the profile's server does"
    )
    parser.add_argument(
        "--load-seconds", type=float, default=0.0, help="delay of the first request per model (model loading)"
    )
    parser.add_argument(
        "--profile-option",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a profile option, e.g. max_model_len=4096 or refuse=true",
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    options = {name: json.loads(value) for name, _, value in (o.partition("=") for o in args.profile_option)}
    state = ServerState(
        responder=load_responder(args.responder),
        embedding_dim=args.embedding_dim,
        latency_ms=args.latency_ms,
        profile=make_profile(args.profile, args.api_key, args.load_seconds, options),
    )
    server = ScriptedServer((args.host, args.port), state, verbose=args.verbose)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file.with_name(args.port_file.name + ".tmp")
        tmp.write_text(str(port), encoding="utf-8")
        os.replace(tmp, args.port_file)
    print(f"scripted OpenAI server listening on http://{args.host}:{port}/v1", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
