"""Entity resolution on the real gpt-4o extractions of *A Christmas Carol*, against our labels.

    python bench/bench_resolution.py

Input: the 84 real gpt-4o extraction answers in ../shared (nano-graphrag's
``tests/fixtures/mock_cache.json``, one text unit each), parsed with our extraction parser and
merged as the standard method merges them; the labelled pairs in ``bench/resolution_labels.csv``
(ours: how they were decided is written at the top of that file). Skipped, with a message, when
../shared is absent.

What it prints (and writes to ``bench/results/resolution.json``):

- **candidate recall** of the standard method's blocking (names + nearest neighbours of entity
  embeddings, default settings): the share of "same" pairs that end up together in at least one
  candidate group, i.e. that the model is asked about. Embeddings come from the product's offline
  hashing embedder (no embedding model is reachable here; a real one knows synonyms, this one only
  shared words). Also: the share that are candidate pairs themselves, the ceiling a perfect judge
  would reach through clustering around centres, the calls and prompt tokens the groups would cost,
  and how recall and calls move with ``neighbours``, ``min_similarity`` and ``max_group_size``.
- **offline rules** precision and recall on the labelled pairs (and on the subset of "same" pairs
  whose names alone link them), with every false merge listed.
- the **graph shrink** (entities, relationships) and the **change in communities** when the
  rules' merges are applied, and when the labelled groups are merged (what a perfect judge would
  do for the labelled names), with the labelled pairs still split across level-0 communities.
- the offline path as the product runs it: the nlp method's **noun phrases** of the book (no
  labels exist for them: every merge is listed for reading).
- the **update cost**: after deleting one text unit's records (10 units, evenly spread), how many
  verdict prompts of the new candidate groups are not among the full build's, i.e. would miss the
  response cache and cost a call.
- timings with the load average, against merging the records (the anchor, same run).

The model's verdicts cannot be measured here: no model is reachable. Their plumbing (prompt,
groups, cache, parsing, application, rejection) is tested against the scripted server with
scripted verdicts in ``graphrag_assets_tests/test_resolution_model.py``; that is not a quality
figure. Where a model is reachable, ``--model`` scores its verdicts on the same labels::

    OPENAI_API_KEY=... python bench/bench_resolution.py --model [--chat-model gpt-4o-mini]

(the endpoint and models come from the environment as for ``graphrag-assets``; calls are cached in
``--workdir``, so a re-run costs nothing). Pointed at the scripted stand-in server, ``--model``
checks only that the path runs: its figures mean nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import invocation, load_average, machine_info, markdown_table, write_results  # noqa: E402

from graphrag_assets.core import schemas  # noqa: E402
from graphrag_assets.core.settings import CommunitySettings, ResolutionSettings, load_settings  # noqa: E402
from graphrag_assets.core.tokens import count_tokens  # noqa: E402
from graphrag_assets.index.chunking import chunk_documents  # noqa: E402
from graphrag_assets.index.communities import build_communities_from_settings  # noqa: E402
from graphrag_assets.index.entity_resolution import (  # noqa: E402
    ResolutionOptions,
    embedding_texts,
    merged_profiles,
    noun_phrase_profiles,  # noqa: E402
    resolution_options,
    resolve_with_model,
    resolve_with_rules,
)
from graphrag_assets.index.extraction_parser import parse_graph_answer  # noqa: E402
from graphrag_assets.index.graph_merge import finalize_graph, merge_graph  # noqa: E402
from graphrag_assets.index.nlp_graph import NOUN_PHRASE_TYPE  # noqa: E402
from graphrag_assets.index.noun_phrases import noun_phrase_records  # noqa: E402
from graphrag_assets.index.resolution_candidates import (  # noqa: E402
    candidate_groups,
    merge_candidates,
    name_candidates,
    neighbour_candidates,
)
from graphrag_assets.index.resolution_clusters import apply_aliases, build_clusters  # noqa: E402
from graphrag_assets.index.resolution_frames import verdict_frame  # noqa: E402
from graphrag_assets.index.resolution_rules import NameEvidence  # noqa: E402
from graphrag_assets.index.resolution_verdicts import Member, entity_list  # noqa: E402
from graphrag_assets.llm.factory import ModelSet  # noqa: E402
from graphrag_assets.llm.local_embedder import LocalEmbedder  # noqa: E402
from graphrag_assets.llm.usage import UsageMeter  # noqa: E402
from graphrag_assets.prompts.templates import load_prompt  # noqa: E402
from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL, NANO_MOCK_CACHE  # noqa: E402

LABELS = Path(__file__).resolve().parent / "resolution_labels.csv"
SENSITIVITY = [
    (0, 0.3, 12),
    (5, 0.3, 12),
    (8, 0.3, 8),
    (8, 0.3, 12),
    (8, 0.3, 16),
    (8, 0.2, 12),
    (10, 0.3, 12),
    (20, 0.0, 12),
]


def carol_extractions() -> pl.DataFrame:
    """Graph extraction rows of the real gpt-4o answers (text unit id = the cache key)."""
    answers = json.loads(NANO_MOCK_CACHE.read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = []
    for key, entry in sorted(answers.items()):
        if "<|>" not in entry["return"]:
            continue  # a report answer, not an extraction
        parsed = parse_graph_answer(entry["return"])
        for e in parsed.entities:
            rows.append(
                {
                    "text_unit_id": key,
                    "record_index": e.index,
                    "record_type": "entity",
                    "title": e.title,
                    "type": e.type,
                    "description": e.description,
                }
            )
        for r in parsed.relationships:
            rows.append(
                {
                    "text_unit_id": key,
                    "record_index": r.index,
                    "record_type": "relationship",
                    "source": r.source,
                    "target": r.target,
                    "description": r.description,
                    "weight": r.weight,
                }
            )
    frame = pl.DataFrame(rows).with_columns(pl.lit("carol").alias("document_key"))
    return schemas.conform(frame, schemas.GRAPH_EXTRACTIONS)


def load_labels(titles: set[str]) -> pl.DataFrame:
    labels = pl.read_csv(LABELS, comment_prefix="#")
    missing = sorted({t for t in labels["left"].to_list() + labels["right"].to_list() if t not in titles})
    if missing:
        raise SystemExit(f"{LABELS.name} names entities the extractions do not have: {missing[:5]}")
    return labels


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def scores(
    labels: pl.DataFrame, canonical: dict[str, str], subset: set[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """Precision and recall of merges on the labelled pairs (a pair is merged when both ends share a canonical)."""
    tp = fp = fn = 0
    false_merges = []
    for left, right, label, note in labels.select("left", "right", "label", "note").iter_rows():
        if subset is not None and label == "same" and pair_key(left, right) not in subset:
            continue
        merged = canonical.get(left, left) == canonical.get(right, right)
        if label == "same":
            tp += merged
            fn += not merged
        elif merged:
            fp += 1
            false_merges.append(f"{left} / {right} ({note})")
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "true_merges": tp,
        "false_merges": fp,
        "missed": fn,
        "false_merge_pairs": false_merges,
    }


def canonical_of(aliases: pl.DataFrame) -> dict[str, str]:
    return dict(aliases.select("alias", "canonical_title").iter_rows())


def co_grouped(groups: list[tuple[str, ...]]) -> set[tuple[str, str]]:
    return {pair_key(a, b) for group in groups for i, a in enumerate(group) for b in group[i + 1 :]}


def blocking(profiles: pl.DataFrame, vectors: np.ndarray, neighbours: int, min_similarity: float) -> pl.DataFrame:
    titles = profiles["title"].to_list()
    by_name = name_candidates(titles)
    if neighbours <= 0:
        return by_name
    return merge_candidates(by_name, neighbour_candidates(titles, vectors, neighbours, min_similarity))


def candidate_figures(
    profiles: pl.DataFrame, labels: pl.DataFrame, vectors: np.ndarray, settings: ResolutionSettings
) -> dict[str, Any]:
    positives = {
        pair_key(a, b) for a, b in labels.filter(pl.col("label") == "same").select("left", "right").iter_rows()
    }
    candidates = blocking(profiles, vectors, settings.neighbours, settings.min_similarity)
    groups = candidate_groups(candidates, settings.max_group_size)
    asked = co_grouped(groups)
    pairs = {pair_key(a, b) for a, b in candidates.select("left", "right").iter_rows()}
    oracle = verdict_frame((a, b, "oracle", 1.0, "labelled same") for a, b in positives & asked)
    ceiling = scores(labels, canonical_of(build_clusters(profiles, oracle)))["recall"]
    template = load_prompt("resolve_entities")
    members = {t: Member(t, k, tuple(d)) for t, k, d in profiles.select("title", "type", "descriptions").iter_rows()}
    tokens = sum(
        count_tokens(template.format(entity_list=entity_list([members[t] for t in group]))) for group in groups
    )
    return {
        "neighbours": settings.neighbours,
        "min_similarity": settings.min_similarity,
        "max_group_size": settings.max_group_size,
        "candidate_pairs": candidates.height,
        "groups": len(groups),
        "prompt_tokens": tokens,
        "candidate_recall": round(len(positives & asked) / len(positives), 4),
        "pair_recall": round(len(positives & pairs) / len(positives), 4),
        "perfect_judge_recall": ceiling,
        "not_proposed": sorted(f"{a} / {b}" for a, b in positives - asked),
        "evidence": dict(candidates.group_by("evidence").len().sort("evidence").iter_rows()),
    }


def group_prompts(profiles: pl.DataFrame, vectors: np.ndarray, settings: ResolutionSettings) -> set[str]:
    """The verdict prompts of the candidate groups (what the response cache is keyed on)."""
    template = load_prompt("resolve_entities")
    members = {t: Member(t, k, tuple(d)) for t, k, d in profiles.select("title", "type", "descriptions").iter_rows()}
    groups = candidate_groups(
        blocking(profiles, vectors, settings.neighbours, settings.min_similarity), settings.max_group_size
    )
    return {template.format(entity_list=entity_list([members[t] for t in group])) for group in groups}


def update_costs(extractions: pl.DataFrame, settings: ResolutionSettings, samples: int = 10) -> list[dict[str, Any]]:
    """New verdict prompts after deleting one text unit, for ``samples`` units spread over the book."""
    embedder = LocalEmbedder()

    def prompts(rows: pl.DataFrame) -> set[str]:
        profiles = merged_profiles(merge_graph(rows).entities)
        vectors = np.asarray(asyncio.run(embedder.embed(embedding_texts(profiles), purpose="bench")), dtype=np.float32)
        return group_prompts(profiles, vectors, settings)

    full = prompts(extractions)
    units = sorted(set(extractions["text_unit_id"].to_list()))
    costs = []
    for unit in units[:: max(1, len(units) // samples)][:samples]:
        after = prompts(extractions.filter(pl.col("text_unit_id") != unit))
        costs.append({"text_unit": unit, "groups": len(after), "new_prompts": len(after - full)})
    return costs


def noun_phrase_figures() -> dict[str, Any]:
    """The offline rules on the noun phrases the nlp method extracts from the book (default chunking)."""
    text = CHRISTMAS_CAROL.read_text(encoding="utf-8")
    documents = schemas.conform(
        pl.DataFrame(
            {"id": ["carol"], "text": [text], "document_key": ["carol"], "title": ["carol"], "human_readable_id": [0]}
        ),
        schemas.DOCUMENTS,
    )
    units = chunk_documents(documents, 1200, 100, "cl100k_base")
    profiles = noun_phrase_profiles(noun_phrase_records(units), NOUN_PHRASE_TYPE)
    resolution = resolve_with_rules(profiles, NameEvidence.from_texts(units["text"].to_list()), ResolutionOptions())
    return {
        "phrases": profiles.height,
        "candidate_pairs": resolution.candidate_pairs,
        "merges": resolution.aliases.height,
        "aliases": [f"{a} → {c}" for a, c in resolution.aliases.select("alias", "canonical_title").iter_rows()],
    }


def graph_figures(extractions: pl.DataFrame, aliases: pl.DataFrame, labels: pl.DataFrame) -> dict[str, Any]:
    merged = merge_graph(apply_aliases(extractions, aliases))
    entities, relationships = finalize_graph(merged.entities, merged.relationships, {}, {})
    communities = build_communities_from_settings(entities, relationships, CommunitySettings(), "2026-01-01")
    canonical = canonical_of(aliases)
    id_of = dict(entities.select("title", "id").iter_rows())
    level0 = {
        eid: c
        for c, ids in communities.filter(pl.col("level") == 0).select("community", "entity_ids").iter_rows()
        for eid in ids
    }
    split = 0
    for left, right in labels.filter(pl.col("label") == "same").select("left", "right").iter_rows():
        a, b = (level0.get(id_of[canonical.get(t, t)]) for t in (left, right))
        split += a is not None and b is not None and a != b
    levels = dict(communities.group_by("level").len().sort("level").iter_rows())
    return {
        "entities": entities.height,
        "relationships": relationships.height,
        "self_loops_dropped": merged.stats.self_loops_dropped,
        "communities": communities.height,
        "communities_per_level": {str(k): v for k, v in levels.items()},
        "largest_level0_community": int(communities.filter(pl.col("level") == 0)["size"].max() or 0),
        "labelled_same_pairs_split_across_level0_communities": split,
    }


def labelled_groups_as_aliases(profiles: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """What a perfect judge would merge among the labelled names: each labelled group around its centre."""
    rows = [
        (a, b, "oracle", 1.0, f"labelled group {g}")
        for a, b, g in labels.filter(pl.col("label") == "same").select("left", "right", "group").iter_rows()
    ]
    return build_clusters(profiles, verdict_frame(rows))


def model_figures(
    profiles: pl.DataFrame, labels: pl.DataFrame, workdir: Path, chat_model: str | None
) -> dict[str, Any]:
    """The model's verdicts on the candidate groups (endpoint from the environment), scored on the labels."""
    workdir.mkdir(parents=True, exist_ok=True)
    overrides: dict[str, Any] = {"method": "standard", "resolution": {"enabled": True}}
    if chat_model:
        overrides["llm"] = {"chat_model": chat_model}
    settings = load_settings(workdir, overrides=overrides)
    meter = UsageMeter()
    started = time.perf_counter()
    with ModelSet(settings, meter) as models:
        resolution = asyncio.run(
            resolve_with_model(models.chat, models.embedder, profiles, resolution_options(settings))
        )
    seconds = time.perf_counter() - started
    totals = meter.totals()
    return {
        "chat_model": settings.llm.chat_model,
        "embedding_model": "local" if settings.llm.use_local_embedder else settings.llm.embedding_model,
        "groups": resolution.groups,
        "unusable_answers": resolution.unusable_answers,
        "merges": resolution.aliases.height,
        "calls": totals.requests,
        "cache_hits": totals.cache_hits,
        "prompt_tokens": totals.prompt_tokens,
        "seconds": round(seconds, 2),
        "scores": scores(labels, canonical_of(resolution.aliases)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", action="store_true", help="also score the verdicts of the model configured in the environment"
    )
    parser.add_argument("--chat-model", default=None, help="chat model for --model (default: llm.chat_model's default)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "graphrag-bench" / "resolution",
        help="response cache for --model",
    )
    args = parser.parse_args()
    if not NANO_MOCK_CACHE.exists():
        print(f"skipped: reference data not available: {NANO_MOCK_CACHE}")
        return 0
    load_start, machine = load_average(), machine_info()
    extractions = carol_extractions()

    started = time.perf_counter()
    merged = merge_graph(extractions)
    merge_seconds = time.perf_counter() - started
    profiles = merged_profiles(merged.entities)
    titles = set(profiles["title"].to_list())
    labels = load_labels(titles)
    positives = labels.filter(pl.col("label") == "same")

    started = time.perf_counter()
    evidence = NameEvidence.from_texts(d for ds in profiles["descriptions"].to_list() for d in ds)
    rules = resolve_with_rules(profiles, evidence, ResolutionOptions())
    rules_seconds = time.perf_counter() - started

    started = time.perf_counter()
    vectors = np.asarray(
        asyncio.run(LocalEmbedder().embed(embedding_texts(profiles), purpose="bench")), dtype=np.float32
    )
    embed_seconds = time.perf_counter() - started
    defaults = ResolutionSettings(enabled=True)
    started = time.perf_counter()
    candidates = candidate_figures(profiles, labels, vectors, defaults)
    blocking_seconds = time.perf_counter() - started
    sensitivity = [
        {
            k: v
            for k, v in candidate_figures(
                profiles,
                labels,
                vectors,
                ResolutionSettings(enabled=True, neighbours=n, min_similarity=m, max_group_size=g),
            ).items()
            if k not in ("not_proposed", "evidence")
        }
        for n, m, g in SENSITIVITY
    ]

    updates = update_costs(extractions, defaults)
    phrases = noun_phrase_figures()
    name_linked = {pair_key(a, b) for a, b in name_candidates(titles).select("left", "right").iter_rows()}
    name_positive = {pair_key(a, b) for a, b in positives.select("left", "right").iter_rows()} & name_linked
    rule_scores = scores(labels, canonical_of(rules.aliases))
    rule_scores_names = scores(labels, canonical_of(rules.aliases), subset=name_positive)

    model = model_figures(profiles, labels, args.workdir, args.chat_model) if args.model else None
    empty = schemas.empty_frame(schemas.ENTITY_ALIASES)
    graph = {
        "before": graph_figures(extractions, empty, labels),
        "offline rules": graph_figures(extractions, rules.aliases, labels),
        "labelled groups merged": graph_figures(extractions, labelled_groups_as_aliases(profiles, labels), labels),
    }
    load_end = load_average()

    print("## Entity resolution on the gpt-4o extractions of A Christmas Carol\n")
    print(f"command: `{invocation()}`; load average {load_start} at start, {load_end} at end; {machine['date']}\n")
    print(
        f"labelled pairs: {labels.height} ({positives.height} same, {labels.height - positives.height} different) over "
        f"{len(set(labels['left']) | set(labels['right']))} of {len(titles)} entities; "
        f"{len(name_positive)} of the same pairs are linked by their names alone\n"
    )
    print("### Candidate recall (standard method's blocking, default settings, offline hashing embedder)\n")
    print(
        markdown_table(
            [
                "candidate recall (target ≥ 0.95)",
                "candidate pairs' own recall",
                "perfect-judge recall",
                "pairs",
                "groups = model calls",
                "prompt tokens",
            ],
            [
                [
                    candidates["candidate_recall"],
                    candidates["pair_recall"],
                    candidates["perfect_judge_recall"],
                    candidates["candidate_pairs"],
                    candidates["groups"],
                    f"{candidates['prompt_tokens']:,}",
                ]
            ],
        )
    )
    print(f"\nnot proposed: {candidates['not_proposed']}\n")
    print(
        markdown_table(
            [
                "neighbours",
                "min_similarity",
                "max_group_size",
                "candidate recall",
                "pair recall",
                "pairs",
                "groups",
                "prompt tokens",
            ],
            [
                [
                    s["neighbours"],
                    s["min_similarity"],
                    s["max_group_size"],
                    s["candidate_recall"],
                    s["pair_recall"],
                    s["candidate_pairs"],
                    s["groups"],
                    f"{s['prompt_tokens']:,}",
                ]
                for s in sensitivity
            ],
        )
    )
    print("\n### Offline rules\n")
    print(
        markdown_table(
            ["pairs", "precision (target ≥ 0.98)", "recall (target ≥ 0.60)", "true merges", "false merges", "missed"],
            [
                [
                    "all labelled",
                    rule_scores["precision"],
                    rule_scores["recall"],
                    rule_scores["true_merges"],
                    rule_scores["false_merges"],
                    rule_scores["missed"],
                ],
                [
                    "same pairs linked by names",
                    rule_scores_names["precision"],
                    rule_scores_names["recall"],
                    rule_scores_names["true_merges"],
                    rule_scores_names["false_merges"],
                    rule_scores_names["missed"],
                ],
            ],
        )
    )
    print(
        f"\nfalse merges: {rule_scores['false_merge_pairs'] or 'none'}; merges made on the whole graph: {rules.aliases.height}\n"
    )
    if model is not None:
        m = model["scores"]
        print(f"### Model verdicts ({model['chat_model']}, embeddings {model['embedding_model']})\n")
        print(
            markdown_table(
                [
                    "precision",
                    "recall",
                    "false merges",
                    "groups",
                    "unusable answers",
                    "calls made",
                    "cache hits",
                    "prompt tokens",
                    "seconds",
                ],
                [
                    [
                        m["precision"],
                        m["recall"],
                        m["false_merges"],
                        model["groups"],
                        model["unusable_answers"],
                        model["calls"],
                        model["cache_hits"],
                        f"{model['prompt_tokens']:,}",
                        model["seconds"],
                    ]
                ],
            )
        )
        print(f"\nfalse merges: {m['false_merge_pairs'] or 'none'}\n")
    print("### Graph shrink and communities\n")
    print(
        markdown_table(
            [
                "merges",
                "entities",
                "relationships",
                "communities (per level)",
                "largest level-0",
                "labelled same pairs split across level-0 communities",
            ],
            [
                [
                    name,
                    g["entities"],
                    g["relationships"],
                    f"{g['communities']} ({' / '.join(str(v) for v in g['communities_per_level'].values())})",
                    g["largest_level0_community"],
                    g["labelled_same_pairs_split_across_level0_communities"],
                ]
                for name, g in graph.items()
            ],
        )
    )
    print(
        f"\n### Offline rules on the nlp method's noun phrases of the book\n\n{phrases['phrases']} phrases, "
        f"{phrases['candidate_pairs']} candidate pairs, {phrases['merges']} merges: {'; '.join(phrases['aliases'])}"
    )
    new = sorted(u["new_prompts"] for u in updates)
    print("\n### Update cost of the model path (one text unit deleted, 10 samples)\n")
    print(
        markdown_table(
            ["groups after", "new prompts (calls): median", "min", "max", "full build's calls"],
            [[updates[0]["groups"], new[len(new) // 2], new[0], new[-1], candidates["groups"]]],
        )
    )
    print("\n### Time\n")
    print(
        markdown_table(
            [
                "merge records (anchor)",
                "offline rules",
                "embed entities (local)",
                "model-path blocking + groups",
                "rules / anchor",
            ],
            [
                [
                    f"{merge_seconds:.3f} s",
                    f"{rules_seconds:.3f} s",
                    f"{embed_seconds:.3f} s",
                    f"{blocking_seconds:.3f} s",
                    f"{rules_seconds / merge_seconds:.1f}×",
                ]
            ],
        )
    )
    if model is None:
        print(
            "\nThe model's verdicts are not measured (no model is reachable); their plumbing is tested against scripted verdicts."
        )
    write_results(
        "resolution.json",
        {
            "benchmark": "entity resolution",
            "command": invocation(),
            "machine": machine,
            "load_average": {"start": load_start, "end": load_end},
            "labels": {"pairs": labels.height, "same": positives.height, "name_linked_same": len(name_positive)},
            "candidates": candidates,
            "sensitivity": sensitivity,
            "rules": {
                "all": rule_scores,
                "name_linked": rule_scores_names,
                "merges": rules.aliases.height,
                "aliases": rules.aliases.select("alias", "canonical_title", "score", "reason").to_dicts(),
            },
            "model": model,
            "update_costs": updates,
            "noun_phrases": phrases,
            "graph": graph,
            "seconds": {
                "merge_anchor": merge_seconds,
                "rules": rules_seconds,
                "embed_local": embed_seconds,
                "model_blocking": blocking_seconds,
            },
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
