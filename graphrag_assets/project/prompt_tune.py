"""``prompt-tune``: the extraction, summary and report prompts adapted to the project's own corpus.

A few text units are sampled (spread over the documents first, then at random, with a fixed
seed); the chat model is asked once what the collection is about (its domain, the expert best
placed to read it, the kinds of things it names), then asked to extract two of the sampled
passages with the built-in extraction prompt and those entity types. The adapted prompts are the
built-in ones with a paragraph naming the domain and the reader (and the language, when given)
after their first paragraph, and, for extraction, the two worked examples replaced by the
passages of the user's own text and the model's answers. They are written to ``prompts/`` in the
project and ``graphrag.yaml`` is pointed at them (its comments kept). A prompt's version is part
of the cache key, so the next ``index`` re-asks exactly the calls the new prompts change.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import SETTINGS_FILE, Settings
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.index.chunking import chunk_documents
from graphrag_assets.index.documents import read_file_documents
from graphrag_assets.index.input_files import discover_input_files
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.types import ChatOptions
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.prompts.templates import load_prompt

PURPOSE = "prompt_tune"
EXAMPLES = 2
PROMPTS_DIR = "prompts"
# graphrag.yaml keys pointed at the written files, by prompt name
SETTING_OF = {
    "extract_graph": ("extraction", "prompt"),
    "summarize_descriptions": ("summarize", "prompt"),
    "community_report": ("reports", "prompt"),
}


@dataclass
class TuneRequest:
    """What the user asked for."""

    domain: str | None = None
    language: str | None = None
    sample: int = 8
    seed: int = 0


@dataclass
class TuneResult:
    """What was learnt and written (or would be, in a dry run)."""

    domain: str
    persona: str
    entity_types: list[str]
    files: dict[str, str] = field(default_factory=dict)  # prompt name -> path relative to the root
    diffs: dict[str, str] = field(default_factory=dict)  # prompt name -> unified diff against the built-in
    calls: int = 0
    prompt_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "persona": self.persona,
            "entity_types": self.entity_types,
            "files": self.files,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "cost_usd": round(self.cost_usd, 6),
        }


def sample_units(settings: Settings, count: int, seed: int = 0) -> list[str]:
    """``count`` passages of the input: one from each document in turn (longest first, so each
    document's voice is heard), then random ones; the same seed gives the same sample."""
    found = discover_input_files(settings.input_dir, settings.input.file_types)
    if not found:
        raise UserError(f"{settings.input.dir} holds no input file to learn from; add documents first.")
    frames = [read_file_documents(settings.input_dir, f.path, f.key, settings.input).frame for f in found]
    documents = pl.concat(frames) if frames else schemas.empty_frame(schemas.DOCUMENTS)
    units = chunk_documents(documents, settings.chunking.size, settings.chunking.overlap, settings.chunking.encoding)
    if units.is_empty():
        raise UserError(f"{settings.input.dir} holds no text to learn from; add documents first.")
    by_document = units.sort(["document_key", "n_tokens"], descending=[False, True]).group_by(
        "document_key", maintain_order=True
    )
    spread = [group["text"][0] for _, group in by_document][:count]
    rest = [t for t in units["text"].to_list() if t not in spread]
    random.Random(seed).shuffle(rest)
    return spread + rest[: max(0, count - len(spread))]


def _escaped(text: str) -> str:
    """User text placed inside a template: braces doubled so they are not placeholders."""
    return text.replace("{", "{{").replace("}", "}}")


def _with_context(template: str, result: TuneResult, language: str | None) -> str:
    """``template`` with a paragraph about the corpus after its first paragraph."""
    first, _, rest = template.partition("\n\n")
    note = f"The collection is about {result.domain}; read it as {result.persona} would."
    if language:
        note += f" Write every description and text in {language}."
    return f"{first}\n\n{_escaped(note)}\n\n{rest}"


def _with_examples(template: str, examples: list[tuple[str, str]], entity_types: list[str]) -> str:
    """The extraction template with its worked examples replaced by ``examples`` (passage, answer)."""
    head, marker, _ = template.partition("EXAMPLE 1\n")
    _, task, tail = template.partition("YOUR TASK\n")
    if not marker or not task:
        return template  # a template without the built-in layout keeps its own examples
    types = ", ".join(entity_types)
    blocks = [
        f"EXAMPLE {n}\nEntity types: {_escaped(types)}\nPassage:\n{_escaped(passage.strip())}\nAnswer:\n{_escaped(answer.strip())}\n"
        for n, (passage, answer) in enumerate(examples, start=1)
    ]
    return head + "\n".join(blocks) + "\nYOUR TASK\n" + tail


async def _learn(models: ModelSet, passages: list[str], request: TuneRequest) -> tuple[str, str, list[str]]:
    prompt = load_prompt("tune_domain", required=("passages",))
    shown = "\n\n".join(f"[{n}] {p.strip()}" for n, p in enumerate(passages, start=1))
    options = ChatOptions(json_mode=True, prompt_version=prompt.version)
    answer = await models.chat.chat(
        [{"role": "user", "content": prompt.format(passages=shown)}], purpose=PURPOSE, options=options
    )
    match = re.search(r"\{.*\}", answer.text, re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    types = [str(t).strip().lower() for t in data.get("entity_types") or [] if str(t).strip()]
    if not types:
        raise UserError(
            f"the chat model '{models.chat.model}' did not name the kinds of things in the documents "
            "(no readable entity_types in its answer); try again, or a model that follows JSON instructions."
        )
    domain = request.domain or str(data.get("domain") or "the documents' subject")
    return domain, str(data.get("persona") or "an attentive reader"), types[:10]


async def _examples(
    models: ModelSet, settings: Settings, passages: list[str], types: list[str]
) -> list[tuple[str, str]]:
    template = load_prompt("extract_graph", settings.extraction.prompt, settings.root)
    found = []
    for passage in passages[:EXAMPLES]:
        text = template.format(entity_types=", ".join(types), input_text=passage)
        options = ChatOptions(prompt_version=template.version)
        answer = await models.chat.chat([{"role": "user", "content": text}], purpose=PURPOSE, options=options)
        records = answer.text.strip()
        if "(" in records:
            found.append((passage, records if records.endswith("<|COMPLETE|>") else records + "\n<|COMPLETE|>"))
    return found


def tune_prompts(settings: Settings, request: TuneRequest, *, dry_run: bool = False) -> TuneResult:
    """Learn the corpus and write the adapted prompts (``dry_run``: count the calls, write nothing)."""
    if not settings.llm.endpoint_configured:
        raise UserError(
            "prompt-tune asks the chat model about your documents; configure llm.base_url or OPENAI_API_KEY."
        )
    passages = sample_units(settings, request.sample, request.seed)
    if dry_run:
        return _estimate(settings, passages)
    meter = UsageMeter()
    with ModelSet(settings, meter) as models:
        domain, persona, types = asyncio.run(_learn(models, passages, request))
        examples = asyncio.run(_examples(models, settings, passages, types))
    result = TuneResult(domain, persona, types)
    totals = meter.totals()
    result.calls, result.prompt_tokens, result.cost_usd = totals.requests, totals.prompt_tokens, totals.cost_usd
    for name in SETTING_OF:
        base = load_prompt(name).text
        text = _with_context(base, result, request.language)
        if name == "extract_graph" and examples:
            text = _with_examples(text, examples, types)
        path = Path(PROMPTS_DIR) / f"{name}.txt"
        (settings.root / path).parent.mkdir(parents=True, exist_ok=True)
        (settings.root / path).write_text(text, encoding="utf-8")
        load_prompt(name, path, settings.root)  # the written file is a valid template
        result.files[name] = str(path)
        result.diffs[name] = "".join(
            difflib.unified_diff(
                base.splitlines(keepends=True), text.splitlines(keepends=True), f"built-in {name}.txt", str(path)
            )
        )
    point_settings_at(settings.root / SETTINGS_FILE, result)
    return result


def _estimate(settings: Settings, passages: list[str]) -> TuneResult:
    """The calls a tune would make and their prompt tokens and price (answers not counted)."""
    count = token_counter(settings.chunking.encoding)
    learn = load_prompt("tune_domain", required=("passages",)).text
    extract = load_prompt("extract_graph", settings.extraction.prompt, settings.root).text
    tokens = count(learn) + sum(count(p) for p in passages)
    tokens += sum(count(extract) + count(p) for p in passages[:EXAMPLES])
    result = TuneResult("", "", [], calls=1 + min(EXAMPLES, len(passages)), prompt_tokens=tokens)
    price = settings.llm.prices.get(settings.llm.chat_model)
    result.cost_usd = tokens * price.input_per_million / 1e6 if price else 0.0
    return result


def point_settings_at(path: Path, result: TuneResult) -> None:
    """Set the prompt files and entity types in ``graphrag.yaml``, keeping its comments and order."""
    from ruamel.yaml import YAML  # round-trips comments, which the user's graphrag.yaml is full of

    yaml = YAML()
    yaml.preserve_quotes = True
    data = yaml.load(path.read_text(encoding="utf-8")) if path.exists() else None
    data = data if data is not None else {}
    for name, (section, key) in SETTING_OF.items():
        if name in result.files:
            data.setdefault(section, {})[key] = result.files[name]
    data.setdefault("extraction", {})["entity_types"] = result.entity_types
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(data, handle)
