"""Which context records an answer cites.

Answers cite ``[Data: Sources (3f9a2c1b); Reports (12)]``: ids a reader cannot look up. The
context records know what each one is (a file, a report title, an entity name), so the CLI prints
the cited records by name and the server marks them in the references it returns.
"""

from __future__ import annotations

import re

from graphrag_assets.query.results import ContextRecords

_CITATION = re.compile(r"\[Data:([^\]]*)\]")
_CITED_KIND = re.compile(r"(Reports|Entities|Relationships|Claims|Sources)\s*\(([^)]*)\)")


def cited_records(answer: str, records: ContextRecords) -> list[tuple[str, str, str]]:
    """(kind, citation, title) of each record the answer cites, in order of first citation."""
    known = {(kind, r.citation): r.title for kind in records.KINDS for r in getattr(records, kind)}
    cited: dict[tuple[str, str], str] = {}
    for block in _CITATION.findall(answer):
        for kind, ids in _CITED_KIND.findall(block):
            for citation in (part.strip() for part in ids.split(",")):
                key = (kind.lower(), citation)
                if key in known and key not in cited:
                    cited[key] = known[key]
    return [(kind, citation, title) for (kind, citation), title in cited.items()]
