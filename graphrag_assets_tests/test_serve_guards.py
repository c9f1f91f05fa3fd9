"""What ``serve`` refuses: addresses without a key, foreign ``Host`` names (DNS rebinding), slow
clients, key guesses, odd references and text, and what ``/api/status`` must not tell.

The address rule and the in-process checks never start a server, so a regression fails here at
once; the timeouts are tried against a real ``serve`` process with raw sockets.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from graphrag_assets.core.errors import UserError
from graphrag_assets.serve.app import create_app
from graphrag_assets.serve.config import build_config, is_loopback
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_tests.serve_process import ServeProcess

KEY = "guard-test-key-51c8"
OFFLINE_SETTINGS = "method: nlp\nllm:\n  embeddings: local\n"


def empty_project(folder: Path, serve_section: str = "") -> Path:
    """A project without an index (the server starts and answers /api/status)."""
    root = make_project(folder, with_sample=False)
    (root / "graphrag.yaml").write_text(OFFLINE_SETTINGS + serve_section, encoding="utf-8")
    return root


def error_message(response, status: int) -> str:
    """The one sentence of an error response with ``status``."""
    assert response.status_code == status, (response.status_code, response.text[:300])
    body = response.json()
    message = body["error"]["message"]
    assert set(body) == {"error"} and "Traceback" not in response.text
    assert message.endswith(".") and message.count("; ") <= 1 and "\n" not in message, message
    return message


# --- the address rule (never starts a server) ----------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_names_are_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "[::]", "192.168.1.20", "10.0.0.5", "172.16.3.4", "fd00::1", "fe80::1", "8.8.8.8", "example.org"],
)
def test_every_other_address_is_refused_without_a_key(host: str, tmp_path: Path) -> None:
    assert not is_loopback(host)
    root = empty_project(tmp_path / "p")
    with pytest.raises(UserError, match=f"refusing to listen on {re.escape(host)} without"):
        build_config([root], None, host, 8000, None)
    assert build_config([root], None, host, 8000, KEY).api_key == KEY


# --- the Host header -----------------------------------------------------------------------------


def test_host_of_drops_the_port_and_normalizes() -> None:
    from graphrag_assets.serve.hosts import host_of

    assert host_of("LocalHost:8000") == "localhost"
    assert host_of("[::1]:8000") == host_of("[0:0::1]") == "[::1]"
    assert host_of("127.0.0.1") == "127.0.0.1"
    assert host_of("evil.example:80") == "evil.example"


@pytest.fixture(scope="module")
def open_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return empty_project(tmp_path_factory.mktemp("guards") / "open")


def test_without_a_key_only_loopback_names_are_answered(open_project: Path) -> None:
    app = create_app(build_config([open_project], None, "127.0.0.1", 0, None))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for host in ("localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:8000", "[::1]", "[::1]:8000"):
            assert client.get("/api/status", headers={"Host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.1.nip.io", "testserver"):
            message = error_message(client.get("/api/status", headers={"Host": host}), 421)
            assert f"--allowed-host {host.split(':')[0]}" in message
        assert client.get("/", headers={"Host": "evil.example"}).status_code == 421
        assert client.post("/api/query", headers={"Host": "evil.example"}, json={"question": "x"}).status_code == 421


def test_allowed_hosts_from_the_flag_the_settings_and_the_address(tmp_path: Path, open_project: Path) -> None:
    config = build_config([open_project], None, "127.0.0.2", 0, None, ["graph.example"])
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        for host in ("graph.example", "GRAPH.example:9000", "127.0.0.2:8000", "localhost"):
            assert client.get("/api/status", headers={"Host": host}).status_code == 200, host
        assert client.get("/api/status", headers={"Host": "other.example"}).status_code == 421
    listed = empty_project(tmp_path / "listed", "serve:\n  allowed_hosts: [wiki.example]\n")
    with TestClient(
        create_app(build_config([listed], None, "127.0.0.1", 0, None)), base_url="http://wiki.example"
    ) as c:
        assert c.get("/api/status").status_code == 200
        assert c.get("/api/status", headers={"Host": "graph.example"}).status_code == 421
    with TestClient(create_app(build_config([open_project], None, "127.0.0.1", 0, None, ["*"]))) as anything:
        assert anything.get("/api/status", headers={"Host": "any.example"}).status_code == 200
    with pytest.raises(UserError, match="--allowed-host takes a host name"):
        build_config([open_project], None, "127.0.0.1", 0, None, ["http://graph.example/"])


def test_with_a_key_the_host_is_checked_only_when_names_are_given(open_project: Path) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    with TestClient(create_app(build_config([open_project], None, "0.0.0.0", 0, KEY))) as client:
        assert client.get("/api/status", headers={**auth, "Host": "server.lan:8000"}).status_code == 200
    listed = build_config([open_project], None, "0.0.0.0", 0, KEY, ["server.lan"])
    with TestClient(create_app(listed)) as client:
        assert client.get("/api/status", headers={**auth, "Host": "server.lan:8000"}).status_code == 200
        assert client.get("/api/status", headers={**auth, "Host": "evil.example"}).status_code == 421


# --- key guesses ---------------------------------------------------------------------------------


def test_wrong_keys_from_one_address_are_slowed_down_and_others_are_not(tmp_path: Path) -> None:
    root = empty_project(tmp_path / "keyed", "serve:\n  key_failures: 4\n  key_failure_window_seconds: 30\n")
    app = create_app(build_config([root], None, "127.0.0.1", 0, KEY))
    wrong, right = {"Authorization": "Bearer guess"}, {"X-API-Key": KEY}
    with (
        TestClient(app, client=("10.0.0.66", 4000)) as guesser,
        TestClient(app, client=("10.0.0.7", 4000)) as user,
    ):
        for _ in range(3):
            assert guesser.get("/api/status", headers=wrong).status_code == 401
        assert guesser.get("/api/status", headers=right).status_code == 200  # a right key resets the count
        for _ in range(3):
            assert guesser.get("/api/status", headers=wrong).status_code == 401
        for _ in range(5):
            assert guesser.get("/api/status").status_code == 401  # no key given: no guess
        assert guesser.get("/api/status", headers=wrong).status_code == 401  # the 4th in a row
        refused = guesser.get("/api/status", headers=wrong)
        message = error_message(refused, 429)
        assert "too many wrong API keys" in message and 1 <= int(refused.headers["retry-after"]) <= 30
        assert guesser.get("/api/status", headers=right).status_code == 429  # not even compared now
        form = guesser.post(
            "/login", content=f"key={KEY}", headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert form.status_code == 429 and "wait" in form.text and "set-cookie" not in form.headers
        assert user.get("/api/status", headers=right).status_code == 200
        assert user.get("/api/status", headers=wrong).status_code == 401
        for _ in range(4):  # the login form counts wrong keys too
            user.post("/login", content="key=nope", headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert user.get("/api/status", headers=right).status_code == 429


# --- odd references, numbers and text: 4xx, never 500 --------------------------------------------


@pytest.fixture(scope="module")
def indexed(nlp_index: Path):
    app = create_app(build_config([nlp_index], None, "127.0.0.1", 0, None))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("route", ["entities", "reports", "relationships", "claims"])
@pytest.mark.parametrize("ref", ["²", "1²", "٣", "--5", "-5", "9" * 5_000, "9" * 30, " 7x"])
def test_odd_references_are_not_found(indexed: TestClient, route: str, ref: str) -> None:
    message = error_message(indexed.get(f"/api/{route}/{ref}"), 404)
    assert message.startswith("there is no ") and len(message) < 400


@pytest.mark.parametrize(
    "path",
    [
        "/api/entities?offset=" + "9" * 30,
        "/api/entities/1?offset=" + "9" * 30,
        "/api/communities?offset=" + "9" * 30,
        "/api/communities?level=" + "9" * 30,
        "/api/entities?offset=-1",
        "/api/entities?limit=²",
    ],
)
def test_out_of_range_numbers_are_refused(indexed: TestClient, path: str) -> None:
    assert error_message(indexed.get(path), 400).startswith("'")


def test_a_lone_surrogate_in_the_text_is_refused(indexed: TestClient) -> None:
    headers = {"Content-Type": "application/json"}
    bodies = [
        ("/api/query", '{"question": "who is \\ud800?", "method": "local", "context_only": true}'),
        ("/api/query", '{"question": "who?", "method": "local", "context_only": true, "system_prompt": "\\udfff"}'),
        ("/v1/chat/completions", '{"model": "graphrag-local", "messages": [{"role": "user", "content": "\\ud800"}]}'),
    ]
    for path, body in bodies:
        assert "lone surrogate" in error_message(indexed.post(path, content=body, headers=headers), 400)
    paired = '{"question": "who is \\ud83d\\ude00?", "method": "local", "context_only": true}'
    assert indexed.post("/api/query", content=paired, headers=headers).status_code == 200


def test_status_does_not_tell_the_absolute_project_folder(indexed: TestClient, nlp_index: Path) -> None:
    status = indexed.get("/api/status")
    shown = status.json()["projects"][0]["root"]
    assert shown == nlp_index.name and str(nlp_index.parent) not in status.text  # it is not under the cwd


# --- slow clients, against a real server ---------------------------------------------------------

TIMEOUT = 1.0
MAX_CONNECTIONS = 6


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory: pytest.TempPathFactory):
    root = empty_project(
        tmp_path_factory.mktemp("strict") / "strict",
        f"serve:\n  request_timeout_seconds: {TIMEOUT}\n  key_failures: 3\n  max_connections: {MAX_CONNECTIONS}\n",
    )
    process = ServeProcess.start("--root", str(root), "--api-key", KEY, "--allowed-host", "graph.example")
    try:
        yield process
    finally:
        process.stop()


def closed_after(sock: socket.socket, limit: float) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` (reading what it sent), failing after ``limit``."""
    sock.settimeout(limit)
    start, received = time.monotonic(), b""
    while True:
        chunk = sock.recv(65536)  # socket.timeout here: the server never closed it
        if not chunk:
            return time.monotonic() - start, received
        received += chunk


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: ", b"GET /api/stat"],
    ids=["nothing", "half-headers", "half-line"],
)
def test_a_client_that_stalls_before_its_headers_end_is_cut_off(strict_server: ServeProcess, sent: bytes) -> None:
    with socket.create_connection(("127.0.0.1", strict_server.port), timeout=5) as sock:
        sock.sendall(sent)
        seconds, _ = closed_after(sock, TIMEOUT + 5)
    assert seconds < TIMEOUT + 3


def test_a_client_that_stalls_in_its_body_gets_408(strict_server: ServeProcess) -> None:
    with socket.create_connection(("127.0.0.1", strict_server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /api/query HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + KEY.encode() + b"\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"question": '
        )
        seconds, received = closed_after(sock, TIMEOUT + 5)
    assert seconds < TIMEOUT + 3 and received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b"serve.request_timeout_seconds" in received


def request(server: ServeProcess, headers: dict[str, str], source: str = "127.0.0.1") -> tuple[int, dict, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10, source_address=(source, 0))
    try:
        connection.request("GET", "/api/status", headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def test_the_real_server_checks_hosts_and_slows_guesses(strict_server: ServeProcess) -> None:
    right = {"X-API-Key": KEY}
    assert request(strict_server, {**right, "Host": "graph.example:8000"})[0] == 200
    status, _, body = request(strict_server, {**right, "Host": "evil.example"})
    assert status == 421 and "--allowed-host evil.example" in json.loads(body)["error"]["message"]
    for _ in range(3):
        assert request(strict_server, {"X-API-Key": "guess"}, "127.0.0.3")[0] == 401
    status, headers, _ = request(strict_server, {"X-API-Key": "guess"}, "127.0.0.3")
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert request(strict_server, right, "127.0.0.4")[0] == 200


def test_stalled_sockets_hold_the_server_only_until_their_deadline(strict_server: ServeProcess) -> None:
    """The reported attack in small: idle sockets up to the connection bound; the server refuses
    more (503) instead of running out of descriptors, and answers again once they are cut off."""
    stalled = [socket.create_connection(("127.0.0.1", strict_server.port), timeout=5) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)
        assert request(strict_server, {"X-API-Key": KEY})[0] == 503
        for sock in stalled:
            closed_after(sock, TIMEOUT + 5)
    finally:
        for sock in stalled:
            sock.close()
    assert request(strict_server, {"X-API-Key": KEY})[0] == 200
