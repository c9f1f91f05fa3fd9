"""Which ``Host`` a request may name: the defence against DNS rebinding.

A web page the user visits can make its own domain resolve to 127.0.0.1 and then read, as the same
origin, whatever a server without an API key answers there. The browser still sends the page's
domain in ``Host``, so a server that answers only for names it knows cannot be read that way.

The names known: the loopback names (``localhost``, ``127.0.0.1``, ``[::1]``), the address the
server listens on, and those given with ``--allowed-host`` or ``serve.allowed_hosts`` (``*``: any).
Any port is accepted with a name. Without an API key every request is checked; with one, the key
is what guards the server (a rebinding page never holds it), so the Host is checked only when names
were given explicitly.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from graphrag_assets.serve.errors import error_body
from graphrag_assets.serve.gate import ASGIApp, Receive, Scope, Send, send_json

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_BINDS = frozenset({"0.0.0.0", "[::]"})
ANY_HOST = "*"
SHOWN_IN_ERRORS = 100  # characters of a refused Host quoted back


def normalize_host(name: str) -> str:
    """A host name as compared: lower case, IP addresses in their short form, IPv6 in brackets."""
    value = name.strip().lower()
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return value
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def host_of(header: str) -> str:
    """The name in a ``Host`` header, without its port."""
    value = header.strip()
    if value.startswith("["):
        end = value.find("]")
        return normalize_host(value[: end + 1] if end > 0 else value)
    name, colon, port = value.rpartition(":")
    return normalize_host(name if colon and (not port or (port.isascii() and port.isdigit())) else value)


def allowed_hosts(bound: str, given: Iterable[str]) -> frozenset[str]:
    """Loopback names, the listening address (unless it is every address) and the names given."""
    names = {*LOOPBACK_HOSTS, *(normalize_host(n) for n in given if n.strip())}
    listening = normalize_host(bound)
    if listening not in WILDCARD_BINDS:
        names.add(listening)
    return frozenset(names)


class HostCheck:
    """ASGI middleware: a request whose ``Host`` is not allowed gets 421 and one sentence."""

    def __init__(self, app: ASGIApp, *, allowed: frozenset[str], enforced: bool) -> None:
        self.app = app
        self.allowed = allowed
        self.enforced = enforced and ANY_HOST not in allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enforced and scope["type"] == "http":
            header = next((v for k, v in scope.get("headers", []) if k.lower() == b"host"), None)
            if header is not None:  # browsers always send one; a client without one is no page
                name = host_of(header.decode("latin-1"))
                if name not in self.allowed:
                    await send_json(send, 421, error_body(421, self._refusal(name), "host_not_allowed"))
                    return
        await self.app(scope, receive, send)

    def _refusal(self, name: str) -> str:
        shown = name if len(name) <= SHOWN_IN_ERRORS else name[: SHOWN_IN_ERRORS - 1] + "…"
        return (
            f"this server does not answer for the host {shown!r} (it answers for {', '.join(sorted(self.allowed))}); "
            f"if that name is yours, restart serve with --allowed-host {shown} (or list it in serve.allowed_hosts)."
        )
