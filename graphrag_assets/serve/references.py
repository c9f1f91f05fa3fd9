"""The records an answer was built from, as structured references a client can show and follow.

Every record of the context is listed by kind (reports, entities, relationships, claims, sources)
with its id, the value answers cite it by, its title, whether the answer cites it, and the API
path that returns it whole. The inline ``[Data: Reports (12); Sources (3f9a2c1b)]`` citations
stay in the answer's text; these references say what they point at, so a chat front-end does not
have to parse them (and can list what was consulted but not cited).
"""

from __future__ import annotations

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
