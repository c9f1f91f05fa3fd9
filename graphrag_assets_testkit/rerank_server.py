"""A scripted ``/rerank`` server on loopback, speaking one API's shape (tests start it by PID).

Scores are word overlap between the query and each text (words of four letters or more), so a
test knows the order to expect. Each API answers on its own path with its own reply, as its
documentation describes (see graphrag_assets/llm/reranker.py): a client that sends the wrong
shape gets a 404 or a 422, like from the real server. ``GET /_calls`` lists the request bodies.

    python -m graphrag_assets_testkit.rerank_server --api tei [--fail]
prints its port on the first line of stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATHS = {"cohere": "/v2/rerank", "jina": "/v1/rerank", "vllm": "/v1/rerank", "infinity": "/rerank", "tei": "/rerank"}


def overlap(query: str, text: str) -> float:
    words = {w.lower() for w in re.findall(r"\w{4,}", query)}
    return float(len(words & {w.lower() for w in re.findall(r"\w{4,}", text)}))


def reply(api: str, body: dict[str, Any]) -> tuple[int, Any]:
    """The status and reply of ``api`` to ``body``."""
    key = "texts" if api == "tei" else "documents"
    texts = body.get(key)
    if not isinstance(texts, list) or not isinstance(body.get("query"), str):
        return 422, {"error": f"expected 'query' and '{key}'"}
    scores = sorted(((i, overlap(body["query"], t) + 1.0 / (i + 2)) for i, t in enumerate(texts)), key=lambda p: -p[1])
    top = scores[: int(body.get("top_n") or len(texts))]
    if api == "tei":
        return 200, [{"index": i, "score": s} for i, s in scores]
    items = [{"index": i, "relevance_score": s} for i, s in top]
    if api == "cohere":
        return 200, {"id": "rr-1", "results": items, "meta": {"billed_units": {"search_units": 1}}}
    if api == "infinity":
        return 200, {
            "object": "rerank",
            "results": [{**x, "document": None} for x in items],
            "model": body.get("model"),
        }
    with_text = [{**x, "document": {"text": texts[x["index"]]}} for x in items]
    usage = {"total_tokens": sum(len(t.split()) for t in texts)}
    if api == "jina":
        return 200, {"model": body.get("model"), "usage": usage, "results": with_text}
    return 200, {"id": "rerank-1", "model": body.get("model"), "usage": usage, "results": with_text}  # vllm


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._send(200, self.server.calls) if self.path == "/_calls" else self._send(404, {})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != PATHS[self.server.api]:
            self._send(404, {"error": f"unknown path {self.path}"})
            return
        self.server.calls.append({"body": body, "authorization": self.headers.get("Authorization")})
        if self.server.fail:
            self._send(500, {"error": "scripted failure"})
            return
        self._send(*reply(self.server.api, body))


class _Server(ThreadingHTTPServer):
    def __init__(self, api: str, fail: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api, self.fail, self.calls = api, fail, []


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", choices=sorted(PATHS), required=True)
    parser.add_argument("--fail", action="store_true")
    args = parser.parse_args(argv)
    server = _Server(args.api, args.fail)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(server.server_address[1], flush=True)
    server.serve_forever()


class RerankServer:
    """A started rerank server process: ``url``, ``calls()``, ``stop()`` (by PID)."""

    def __init__(self, api: str, *, fail: bool = False) -> None:
        command = [sys.executable, "-m", "graphrag_assets_testkit.rerank_server", "--api", api]
        self.process = subprocess.Popen(command + (["--fail"] if fail else []), stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def calls(self) -> list[dict[str, Any]]:
        import urllib.request

        with urllib.request.urlopen(self.url + "/_calls") as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    main()
