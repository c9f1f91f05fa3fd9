"""Stand-in model answers for the side-by-side benchmark with Microsoft GraphRAG.

The scripted OpenAI-compatible server (``graphrag_assets_testkit/openai_server.py``) calls
``respond(body)`` for every chat request. Requests sent by graphrag-assets go unchanged to
``graphrag_assets_testkit.graphrag_responder.respond``. Requests sent by Microsoft GraphRAG 3.x
are recognised by a few words of its built-in prompts, their data part (passage, description
list, context tables, question) is taken out, and the answer is built by the *same* functions
of ``graphrag_responder`` from that data, so equivalent requests get equivalent answers:

| MS GraphRAG request              | answered like our                          |
|----------------------------------|--------------------------------------------|
| extract_graph (first turn)       | extraction prompt: ``extraction_answer``   |
| extract_graph "continue" turn    | gleaning turn: ``glean_answer``            |
| extract_graph Y/N loop check     | loop check: ``N``                          |
| summarize_descriptions           | summary prompt: ``summary_answer``         |
| community report (json_schema)   | report prompt: ``report_answer`` (tables converted from CSV) |
| global search map (JSON points)  | map prompt: ``map_answer``                 |
| DRIFT HyDE expansion             | HyDE prompt                                |
| DRIFT primer (structured)        | primer prompt                              |
| DRIFT local step (JSON)          | DRIFT local prompt                         |
| local, global reduce, DRIFT reduce, basic | ``cited_answer``                  |
| configuration check ("Say Hello World") | ``Hello World``                     |

DRIFT primer follow-up questions are made as ours are: from the first three capitalised names
of the whole prompt, so both products get three per fold (the same three in every fold).

Differences that remain are the products' own: MS joins a gleaning answer to the first answer
without a delimiter, so the record the gleaning adds is lost there (its own parser, not the
answer); MS writes report context as comma-separated tables, which are converted to the
``|`` tables ``report_answer`` reads (MS has no entity type column: the type cell is empty);
MS's global map and basic search tables have no ``-----Reports-----`` / ``-----Sources-----``
line, which is added before reading them.

Never imported by the product.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from graphrag_assets_testkit import graphrag_responder as ours

# A few words that identify each MS GraphRAG prompt (v3 built-in prompts), nothing more.
MS_EXTRACT_TAIL = "\nText:"
MS_EXTRACT_END = "######################\nOutput:"
MS_CONTINUE = "MANY entities and relationships were missed"
MS_LOOP_CHECK = "Answer Y if there are still entities or relationships"
MS_SUMMARY_NAME = "Entities:"
MS_SUMMARY_LIST = "Description List:"
MS_REPORT = "Write a comprehensive report of a community"
MS_MAP = '"points"'
MS_HYDE = "Create a hypothetical answer to the following query:"
MS_PRIMER = "intermediate_answer"
MS_FOLLOW_UPS = "follow_up_queries"
MS_PING = "This is an LLM connectivity test"
MS_DATA = "---Data tables---"
MS_ROLE = "---Role---"  # local, basic, global reduce and DRIFT reduce system prompts open with it
MS_REDUCE = "multiple analysts"
MS_DRIFT_REDUCE = "data in the reports provided"


def respond(body: dict[str, Any]) -> str:
    """The answer text for one chat completion request from either product."""
    kind = ms_kind(body)
    if kind is None:
        return ours.respond(body)
    return MS_ANSWERS[kind](body)


def request_kind(body: dict[str, Any]) -> str:
    """What a chat request is for, on either side (the benchmark counts calls per purpose)."""
    return our_kind(body) or ms_kind(body) or "other"


# The opening words of our prompts (graphrag_assets/prompts/*.txt), most specific first.
OUR_HEADS = [
    ("extract_graph", "You are helping to build a knowledge graph"),
    ("extract_claims", "You are helping an analyst collect claims"),
    ("summarize_descriptions", "Several descriptions of the same thing"),
    ("community_report", "You are writing a briefing about one community"),
    ("global_map", "You are one of several analysts"),
    ("global_rate", "Decide how relevant a report"),
    ("global_reduce", "Several analysts have each read"),
    ("drift_hyde", "Someone asked a question about a collection"),
    ("drift_primer", "You are exploring a collection of documents"),
    ("drift_local", "You are helping to answer a larger question"),
    ("drift_reduce", "A question about a collection of documents was explored"),
    ("basic_search", "You answer questions about a collection of documents. Below are the passages"),
    ("local_search", "You answer questions about a collection of documents"),
]


def our_kind(body: dict[str, Any]) -> str | None:
    """The purpose of a request sent by graphrag-assets, or None."""
    user = ours._last_user(body)
    if "Does the passage still contain" in user:
        return "extract_graph_loop_check"
    if "Your previous answer missed some" in user:
        return "extract_claims_glean" if "claims" in user.split(".")[0] else "extract_graph_glean"
    first = _first_text(body)
    return next((kind for kind, head in OUR_HEADS if first.startswith(head)), None)


def ms_kind(body: dict[str, Any]) -> str | None:
    """The purpose of a request sent by MS GraphRAG (recognised by its built-in prompts), or None."""
    if our_kind(body) is not None:
        return None
    first = _first_text(body)
    user = ours._last_user(body)
    if first.startswith(MS_PING):
        return "config_check"
    if user.startswith(MS_CONTINUE):
        return "extract_graph_glean"
    if MS_LOOP_CHECK in user:
        return "extract_graph_loop_check"
    if MS_EXTRACT_END in first and MS_EXTRACT_TAIL in first and '("entity"<|>' in first:
        return "extract_graph"
    if MS_SUMMARY_LIST in first and MS_SUMMARY_NAME in first:
        return "summarize_descriptions"
    if MS_REPORT in first:
        return "community_report"
    if first.startswith(MS_HYDE):
        return "drift_hyde"
    if MS_PRIMER in first and MS_FOLLOW_UPS in first:
        return "drift_primer"
    if MS_FOLLOW_UPS in first:
        return "drift_local"
    if MS_MAP in first and MS_DATA in first:
        return "global_map"
    if first.startswith(MS_ROLE):
        if MS_REDUCE in first:
            return "global_reduce"
        if MS_DRIFT_REDUCE in first:
            return "drift_reduce"
        if MS_DATA + "\n\nid|text\n" in first:
            return "basic_search"
        return "local_search"
    return None


def _glean(body: dict[str, Any]) -> str:
    return ours.glean_answer(_as_our_extraction(_extraction_passage(_first_text(body))))


def _primer(body: dict[str, Any]) -> str:
    everything, user = ours._messages_text(body), ours._last_user(body)
    return json.dumps(
        {
            "intermediate_answer": ours.cited_answer(everything, user),
            "score": 60,
            "follow_up_queries": [f"Who is involved in {w}?" for w in ours._names(everything)[:3]],
        }
    )


def _drift_local(body: dict[str, Any]) -> str:
    answer = ours.cited_answer(ours._messages_text(body), ours._last_user(body))
    return json.dumps({"response": answer, "score": 50, "follow_up_queries": []})


def _cited(section: str | None = None) -> Any:
    def answer(body: dict[str, Any]) -> str:
        everything = ours._messages_text(body)
        return ours.cited_answer(_with_section(everything, section) if section else everything, ours._last_user(body))

    return answer


MS_ANSWERS: dict[str, Any] = {
    "config_check": lambda body: "Hello World",
    "extract_graph_glean": _glean,
    "extract_graph_loop_check": lambda body: "N",
    "extract_graph": lambda body: ours.extraction_answer(_extraction_passage(_first_text(body))),
    "summarize_descriptions": lambda body: ours.summary_answer(_as_our_summary(_first_text(body))),
    "community_report": lambda body: ours.report_answer(_as_our_report_tables(_first_text(body))),
    "drift_hyde": lambda body: f"# Hypothetical report\n\n{ours._last_user(body)[:200]}",
    "drift_primer": _primer,
    "drift_local": _drift_local,
    "global_map": lambda body: ours.map_answer(
        _with_section(ours._messages_text(body), "Reports"), ours._last_user(body)
    ),
    "global_reduce": _cited(),
    "drift_reduce": _cited(),
    "basic_search": _cited("Sources"),
    "local_search": _cited(),
}


def _first_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return str(messages[0].get("content") or "").lstrip() if messages else ""


def _with_section(prompt: str, name: str) -> str:
    """MS writes the global map and basic search tables without the ``-----Name-----`` line
    that its local search tables (and all of ours) have: add it so the same reader applies."""
    return prompt.replace(MS_DATA + "\n\n", f"{MS_DATA}\n\n-----{name}-----\n", 1)


def _extraction_passage(prompt: str) -> str:
    start = prompt.rfind(MS_EXTRACT_TAIL)
    end = prompt.rfind(MS_EXTRACT_END)
    if start < 0:
        return ""
    return prompt[start + len(MS_EXTRACT_TAIL) : end if end > start else None].strip()


def _as_our_extraction(passage: str) -> dict[str, Any]:
    """A request body laid out like our extraction conversation, for ``glean_answer``."""
    return {"messages": [{"role": "user", "content": f"Passage:\n{passage}\nAnswer:"}]}


def _as_our_summary(prompt: str) -> str:
    """The name and description list of an MS summary prompt, laid out like ours."""
    name = ours._between(prompt, MS_SUMMARY_NAME, MS_SUMMARY_LIST)
    descriptions = ours._between(prompt, MS_SUMMARY_LIST, "#######")
    return f"relationship):\n{name}\n\nDescriptions:\n{descriptions}\n\nMerged description:"


# MS report context columns -> our report context columns (id|entity|type|description|degree and
# id|source|target|description|combined_degree).
_ENTITY_COLUMNS = ("human_readable_id", "title", None, "description", "degree")
_RELATIONSHIP_COLUMNS = ("human_readable_id", "source", "target", "description", "combined_degree")


def _as_our_report_tables(prompt: str) -> str:
    """The Entities and Relationships CSV sections of an MS report prompt as our ``|`` tables."""
    sections = []
    for name, columns in (("Entities", _ENTITY_COLUMNS), ("Relationships", _RELATIONSHIP_COLUMNS)):
        rows = _csv_section(prompt, name)
        lines = ["|".join(c or "type" for c in columns)]
        for row in rows:
            cells = [(row.get(c) or "") if c else "" for c in columns]
            lines.append("|".join(cell.replace("\n", " ").replace("|", "/") for cell in cells))
        sections.append(f"-----{name}-----\n" + "\n".join(lines))
    return "\n\n".join(sections) + "\n\n-----End-----\n"


def _csv_section(prompt: str, name: str) -> list[dict[str, str]]:
    """Rows of one ``-----Name-----`` comma-separated section, up to its first blank line
    (quoted cells may span lines, so the blank line is found by the CSV reader)."""
    marker = f"-----{name}-----\n"
    start = prompt.find(marker)
    if start < 0:
        return []
    reader = csv.reader(io.StringIO(prompt[start + len(marker) :]))
    header = next(reader, [])
    rows = []
    for row in reader:
        if not row:
            break
        rows.append(dict(zip(header, row)))
    return rows
