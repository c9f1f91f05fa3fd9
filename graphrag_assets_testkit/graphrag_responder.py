"""A stand-in for a real model, for the scripted OpenAI-compatible server.

It recognises which of our prompts it was sent (by each prompt's opening words) and answers in
the shape a real model would, derived from the text it was given: extraction records for the
capitalised names in the passage, merged descriptions, report JSON built from the context
tables, JSON map points, answers citing the context. Deterministic: the same request always gets
the same answer, so cached and uncached runs can be compared exactly.

Used by the end-to-end tests and by the benchmarks (``--responder
graphrag_assets_testkit.graphrag_responder:respond``). Never by the product itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

NAME = re.compile(
    r"\b(?:Dr\.\s|Mr\.\s|Mrs\.\s|Judge\s|Mayor\s)?[A-ZÀ-Þ][\w'’-]+(?:\s+(?:of\s+the\s+|of\s+|de\s+)?[A-ZÀ-Þ][\w'’-]+)*"
)
STOP = {
    "The",
    "A",
    "An",
    "In",
    "On",
    "At",
    "It",
    "He",
    "She",
    "They",
    "We",
    "I",
    "His",
    "Her",
    "Their",
    "This",
    "That",
    "When",
    "After",
    "Before",
    "But",
    "And",
    "Or",
    "If",
    "As",
    "By",
    "For",
    "From",
    "To",
    "With",
    "Of",
    "Our",
    "There",
    "Then",
    "Yes",
    "No",
    "What",
    "Who",
    "How",
    "Why",
    "Where",
    "Section",
    "Page",
    "Chapter",
    "Stave",
    "Mr",
    "Mrs",
    "Dr",
    "You",
    "My",
    "Your",
    "Its",
    "One",
    "Two",
    "Three",
    "Not",
}
ORGANIZATION = (
    "council",
    "cooperative",
    "institute",
    "lines",
    "authority",
    "service",
    "court",
    "company",
    "bank",
    "society",
    "tide",
)
GEO = (
    "reef",
    "point",
    "channel",
    "port",
    "harbour",
    "street",
    "lighthouse",
    "town",
    "city",
    "island",
    "london",
    "hall",
)
EVENT = ("storm", "festival", "accord", "meeting", "christmas", "war", "flood")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def _messages_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def _last_user(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def _between(text: str, start: str, end: str | None = None) -> str:
    index = text.rfind(start)
    if index < 0:
        return ""
    rest = text[index + len(start) :]
    if end is not None:
        stop = rest.find(end)
        if stop >= 0:
            rest = rest[:stop]
    return rest.strip()


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _names(sentence: str) -> list[str]:
    found = []
    for match in NAME.finditer(sentence):
        words = match.group(0).split()
        while words and words[0].strip(".") in STOP:
            words = words[1:]
        name = " ".join(words).strip(" .,'’")
        if len(name) >= 3 and name not in found and not name.isdigit():
            found.append(name)
    return found


def _type(name: str) -> str:
    lower = name.lower()
    if any(word in lower for word in ORGANIZATION):
        return "ORGANIZATION"
    if any(word in lower for word in EVENT):
        return "EVENT"
    if any(word in lower for word in GEO):
        return "GEO"
    return "PERSON"


def extraction_answer(passage: str, limit: int = 40) -> str:
    """Entity and relationship records for the capitalised names of the passage."""
    entities: dict[str, str] = {}
    relationships: list[tuple[str, str, str, int]] = []
    seen_pairs: set[tuple[str, str]] = set()
    for sentence in _sentences(passage):
        names = [n for n in _names(sentence)][:6]
        for name in names:
            if name not in entities and len(entities) < limit:
                entities[name] = sentence[:200]
        for i, a in enumerate(names):
            for b in names[i + 1 : i + 3]:
                if a in entities and b in entities and (a, b) not in seen_pairs:
                    seen_pairs.add((a, b))
                    relationships.append((a, b, sentence[:200], 1 + _digest(a + b) % 9))
    records = [f'("entity"<|>{name.upper()}<|>{_type(name)}<|>{text})' for name, text in entities.items()]
    records += [
        f'("relationship"<|>{a.upper()}<|>{b.upper()}<|>{text}<|>{w})' for a, b, text, w in relationships[:limit]
    ]
    return "##\n".join(records) + "\n<|COMPLETE|>"


CLAIM_VERBS = ("sued", "ordered", "signed", "fined", "paid", "agreed", "accused", "approved")


def claims_answer(passage: str) -> str:
    """A claim record for every sentence with a legal or financial verb and two names."""
    records = []
    for sentence in _sentences(passage):
        lower = sentence.lower()
        verb = next((v for v in CLAIM_VERBS if v in lower), None)
        names = _names(sentence)
        if verb and names:
            obj = names[1].upper() if len(names) > 1 else "NONE"
            records.append(
                f"({names[0].upper()}<|>{obj}<|>{verb.upper()}<|>TRUE<|>NONE<|>NONE<|>{sentence[:200]}<|>{sentence[:200]})"
            )
    return "##\n".join(records) + "\n<|COMPLETE|>"


def glean_answer(body: dict[str, Any]) -> str:
    """One extra record the first answer left out (the last two names of the passage), or nothing."""
    passage = _between(_messages_text(body), "Passage:", "Answer:")
    names = [n for s in _sentences(passage) for n in _names(s)]
    unique = list(dict.fromkeys(names))
    if len(unique) < 2:
        return "<|COMPLETE|>"
    a, b = unique[-1], unique[0]
    return (
        f'("relationship"<|>{a.upper()}<|>{b.upper()}<|>{a} and {b} are both part of this passage.<|>2)\n<|COMPLETE|>'
    )


def summary_answer(prompt: str) -> str:
    name = _between(prompt, "relationship):", "Descriptions:") or "It"
    raw = _between(prompt, "Descriptions:", "Merged description:")
    try:
        descriptions = json.loads(raw)
    except json.JSONDecodeError:
        descriptions = [line.strip("- ") for line in raw.splitlines() if line.strip()]
    if isinstance(descriptions, str):
        descriptions = [descriptions]
    merged = " ".join(str(d) for d in descriptions[:4])
    return f"{name.strip(chr(34))}: {merged}"[:1200]


def _table_rows(context: str, section: str) -> list[list[str]]:
    block = _between(context, f"-----{section}-----", "-----")
    lines = [line for line in block.splitlines() if line.strip()]
    return [line.split("|") for line in lines[1:]]


def report_answer(prompt: str) -> str:
    entities = _table_rows(prompt, "Entities")
    relationships = _table_rows(prompt, "Relationships")
    names = [row[1] for row in entities if len(row) > 1][:3] or ["the community"]
    findings = []
    for row in relationships[:6]:
        if len(row) >= 4:
            findings.append(
                {"summary": f"{row[1]} and {row[2]}", "explanation": f"{row[3]} [Data: Relationships ({row[0]})]"}
            )
    for row in entities[: max(0, 5 - len(findings))]:
        if len(row) >= 4:
            findings.append({"summary": f"About {row[1]}", "explanation": f"{row[3]} [Data: Entities ({row[0]})]"})
    while len(findings) < 5:
        findings.append({"summary": f"Note {len(findings) + 1}", "explanation": "The data says little more."})
    rating = float(min(10, 1 + len(entities) + len(relationships) // 2))
    return json.dumps(
        {
            "title": " and ".join(names),
            "summary": f"This community centres on {', '.join(names)}, with {len(entities)} entities and {len(relationships)} relationships.",
            "rating": rating,
            "rating_explanation": "The rating grows with the size of the community.",
            "findings": findings,
        }
    )


def map_answer(prompt: str, question: str) -> str:
    rows = _table_rows(prompt, "Reports")
    words = {w.lower() for w in re.findall(r"\w{4,}", question)}
    points = []
    for row in rows:
        text = "|".join(row).lower()
        overlap = sum(1 for w in words if w in text)
        if overlap and row:
            points.append(
                {
                    "description": f"{row[1] if len(row) > 1 else 'A report'} is relevant [Data: Reports ({row[0]})]",
                    "score": min(100, 20 * overlap),
                }
            )
    return json.dumps({"points": points[:5]})


def rate_answer(prompt: str, question: str) -> str:
    words = {w.lower() for w in re.findall(r"\w{4,}", question)}
    overlap = sum(1 for w in words if w in prompt.lower())
    return json.dumps({"reason": "keyword overlap", "rating": min(5, overlap)})


def cited_answer(prompt: str, question: str) -> str:
    """A short answer quoting the first rows of the context with their citations."""
    parts = []
    for section, label in (("Reports", "Reports"), ("Entities", "Entities"), ("Sources", "Sources")):
        rows = _table_rows(prompt, section)
        if rows:
            row = rows[0]
            parts.append(f"{(row[1] if len(row) > 1 else '')[:160]} [Data: {label} ({row[0]})]")
    body = " ".join(parts) or "The data provided does not answer this question."
    return f"Answer to: {question.strip()[:120]}\n\n{body}"


def combine_answer(prompt: str, question: str) -> str:
    """A reduce answer: the cited statements found in the intermediate points or answers."""
    cited = [line.strip() for line in prompt.splitlines() if "[Data:" in line and not line.lstrip().startswith("{")]
    body = "\n".join(f"- {line}" for line in dict.fromkeys(cited)) or "The data provided does not answer this question."
    return f"Answer to: {question.strip()[:120]}\n\n{body}"


_ENTITY_LINE = re.compile(r"^(\d+)\. (.+?) \[([^\]]*)\]:", re.MULTILINE)
_TITLES = {"THE", "DR.", "MR.", "MRS.", "MS.", "JUDGE", "MAYOR", "CAPTAIN"}


def resolution_answer(prompt: str) -> str:
    """Groups the listed entities of one type whose names agree once titles are dropped, or whose
    one-word name is the last word of another's (a surname): a naive, deterministic judge."""
    listed = [
        (int(n), title, kind) for n, title, kind in _ENTITY_LINE.findall(_between(prompt, "Entities (", "Answer with"))
    ]

    def key(title: str) -> tuple[str, ...]:
        words = title.split()
        while len(words) > 1 and words[0] in _TITLES:
            words = words[1:]
        return tuple(words)

    groups: list[list[int]] = []
    placed: set[int] = set()
    for n, title, kind in listed:
        if n in placed:
            continue
        mine = key(title)
        same = [
            m
            for m, other, other_kind in listed
            if m != n
            and m not in placed
            and other_kind == kind
            and (key(other) == mine or (len(key(other)) == 1 and mine[-1:] == key(other)))
        ]
        if same:
            groups.append([n, *same])
            placed.update([n, *same])
    return json.dumps(
        {
            "groups": [
                {"members": g, "confidence": 0.9, "reason": "the names agree once titles are dropped"} for g in groups
            ]
        }
    )


def lazy_relevant(question: str, passage: str) -> bool:
    """The scripted relevance test of lazy search: the passage shares two words of five letters or
    more with the question (tests use the same rule to check what may be cited)."""
    words = {w.lower() for w in re.findall(r"\w{5,}", question)}
    return len(words & {w.lower() for w in re.findall(r"\w{5,}", passage)}) >= 2


def relevance_answer(prompt: str) -> str:
    question = _between(prompt, "Question:", "Passages:").strip()
    passages = re.findall(r"^\[(\d+)\] (.*?)(?=^\[\d+\] |\Z)", _between(prompt, "Passages:", "Reply with"), re.S | re.M)
    return json.dumps({"relevant": [int(n) for n, text in passages if lazy_relevant(question, text)]})


def judge_answer(prompt: str) -> str:
    """The scripted judge of ``eval``: correct when the answer contains the expected text."""
    expected = _between(prompt, "Expected answer:", "Answer to grade:").strip().lower()
    answer = _between(prompt, "Answer to grade:", "Reply with one word").lower()
    return "CORRECT" if expected and any(e.strip() in answer for e in expected.split("|")) else "INCORRECT"


def respond(body: dict[str, Any]) -> str:
    """The answer text for one chat completion request."""
    everything = _messages_text(body)
    user = _last_user(body)
    head = everything.lstrip()[:400]
    if head.startswith("Decide which of the numbered passages"):  # lazy search's relevance tests
        return relevance_answer(everything)
    if head.startswith("Split the question below"):
        return json.dumps({"subqueries": [_between(everything, "Question:", "Reply with").strip()]})
    if head.startswith("Below are passages sampled from a collection"):  # prompt-tune
        return json.dumps(
            {
                "domain": "a harbour town's affairs",
                "persona": "a local historian",
                "entity_types": ["person", "organization", "geo", "event", "vessel"],
            }
        )
    if head.startswith("You grade one answer"):  # eval's judge
        return judge_answer(everything)
    if head.startswith("Reply with a JSON object"):  # graphrag-assets doctor's probes
        return json.dumps({"ready": True})
    if head.startswith("Reply with the single word"):
        return "ready"
    if "Does the passage still contain" in user:
        return "N"
    if "Your previous answer missed some claims" in user:
        return "<|COMPLETE|>"
    if "Your previous answer missed some entities" in user:
        return glean_answer(body)
    if head.startswith("You are helping to build a knowledge graph"):
        return extraction_answer(_between(everything, "Passage:", "Answer:"))
    if head.startswith("You are helping an analyst collect claims"):
        return claims_answer(_between(everything, "Passage:", "Answer:"))
    if head.startswith("Some entities of a knowledge graph may be duplicates"):
        return resolution_answer(everything)
    if head.startswith("Several descriptions of the same thing"):
        return summary_answer(everything)
    if head.startswith("You are writing a briefing about one community"):
        return report_answer(everything)
    if head.startswith("You are one of several analysts"):
        return map_answer(everything, user)
    if head.startswith("Decide how relevant a report"):
        return rate_answer(everything, user)
    if head.startswith("Someone asked a question about a collection"):
        return f"# Hypothetical report\n\n{user[:200]}"
    if head.startswith("You are exploring a collection of documents"):
        return json.dumps(
            {
                "intermediate_answer": cited_answer(everything, user),
                "score": 60,
                "follow_up_queries": [f"Who is involved in {w}?" for w in _names(everything)[:3]],
            }
        )
    if head.startswith("Several analysts have each read") or head.startswith(
        "A question about a collection of documents was explored"
    ):
        return combine_answer(everything, user)
    if head.startswith("You are helping to answer a larger question"):
        return json.dumps({"response": cited_answer(everything, user), "score": 50, "follow_up_queries": []})
    return cited_answer(everything, user)
