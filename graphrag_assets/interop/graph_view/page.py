"""One self-contained HTML page from the view's assets and data: nothing is fetched when it opens."""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any

ASSETS = ("view.css", "markdown.js", "view.js", "page.html")
_MARKER = re.compile(r"/\*GRAPH_VIEW_(CSS|JS|DATA|TITLE)\*/")


def asset_text(name: str) -> str:
    """The text of one of the view's files (:data:`ASSETS`), as installed with the package."""
    if name not in ASSETS:
        raise ValueError(f"unknown graph view asset {name!r}")
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def data_json(data: dict[str, Any]) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element (``<`` is escaped, so no
    ``</script>`` or ``<!--`` in a description can end or change the element)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def render_page(data: dict[str, Any]) -> str:
    """The page: ``page.html`` with the stylesheet, the script, the data and the title inlined."""
    parts = {
        "CSS": asset_text("view.css"),
        "JS": asset_text("markdown.js") + "\n" + asset_text("view.js"),
        "DATA": data_json(data),
        "TITLE": html.escape(str(data.get("title", "graph"))),
    }
    return _MARKER.sub(lambda m: parts[m.group(1)], asset_text("page.html"))
