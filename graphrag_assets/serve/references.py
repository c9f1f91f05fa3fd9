"""The records an answer was built from, as structured references a client can show and follow.

Every record of the context is listed by kind (reports, entities, relationships, claims, sources)
with its id, the value answers cite it by, its title, whether the answer cites it, and the API
path that returns it whole. The inline ``[Data: Reports (12); Sources (3f9a2c1b)]`` citations
stay in the answer's text; these references say what they point at, so a chat front-end does not
have to parse them (and can list what was consulted but not cited).

:func:`citations` goes one step further for the cited sources: each passage the answer rests on,
with its document, title and the character span of the passage in the original document
(:class:`~graphrag_assets.query.results.Citation`), and the path that returns the text unit it
lies in (whose ``start_char`` says where, so a page can mark the span inside it).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from graphrag_assets.query.citations import cited_records
from graphrag_assets.query.results import QueryResult


def references(result: QueryResult, prefix: str) -> dict[str, list[dict[str, Any]]]:
    """``{kind: [{id, human_readable_id, citation, title, cited, href}]}`` for every context record.

    ``prefix`` is the project's path prefix (``/p/NAME``), so ``href`` names the project whatever
    header or default chose it for this request.
    """
    records = result.context_records
    cited = {(kind, citation) for kind, citation, _ in cited_records(result.answer, records)}
    out: dict[str, list[dict[str, Any]]] = {}
    for kind in records.KINDS:
        out[kind] = [
            {
                "id": r.id,
                "human_readable_id": r.human_readable_id,
                "citation": r.citation,
                "title": r.title,
                "cited": (kind, r.citation) in cited,
                "href": f"{prefix}/api/{kind}/{r.citation}",
            }
            for r in getattr(records, kind)
        ]
    return out


def citations(result: QueryResult, prefix: str) -> list[dict[str, Any]]:
    """The answer's cited passages, each as :class:`~graphrag_assets.query.results.Citation` plus
    ``href``: the text unit the passage lies in."""
    return [{**asdict(c), "href": f"{prefix}/api/sources/{c.citation}"} for c in result.citations]
