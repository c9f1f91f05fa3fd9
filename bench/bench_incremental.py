"""Incremental update vs. full rebuild: 50 small documents, then one more.

    python bench/bench_incremental.py [--latency-ms 0 200] [--repeat 3] [--documents 50] [--workdir DIR] [--keep]
                                      [--results incremental.json]

The corpus is generated here, deterministically and without ../shared: chronicle entries about a
fictional harbour town (people, places, organizations and events that recur across documents,
each document centred on one neighbourhood so the graph has community structure), 1-3 KB each,
one text unit per document. The added document introduces a newcomer and mentions people,
places and events the corpus already knows, as a real new document would.

For each stand-in latency (default 0 ms: our own overhead; 200 ms: model time dominates):
  initial  fresh project, ``graphrag-assets index`` over the 50 documents;
  update   the 51st document added to that project, ``index`` again (cache warm, graph updated);
  rebuild  fresh project (no cache) holding all 51 documents, ``index`` once.
The headline figure is update / rebuild for model calls and for wall time. The update must give
the same output tables as the rebuild (the corpus graph is recomputed from every document), and
the breakdown says where the update's calls went: extraction of the new text unit, summaries
whose description set changed, reports whose community context changed, embeddings of new texts.

Prints markdown tables and writes bench/results/incremental.json.

Update stability (issue 13): ``--scenario carol`` and ``--scenario edits`` measure, per update
mode, how many community reports an update regenerates:

  carol  *A Christmas Carol* (../shared; skipped when absent), then one 237-word document
         (the update case of ``msgraphrag_compare.py``);
  edits  a generated corpus (default 500 documents in 50 neighbourhoods), then 10 successive
         single-document edits (adds, changes and deletes mixed), each indexed on its own.

Modes: ``exact-before`` (exact mode with the code of ``--before-commit``, the commit this work
started from, run from a ``git archive`` of it through PYTHONPATH), ``exact`` and ``stable``
(``communities.update: stable``). Each update reports reports regenerated (report calls made) /
reports stored, update tokens / rebuild tokens (a fresh project without cache over the same final
input, one per code version) and the modularity drift of the stored level-0 communities against
a fresh clustering of the same graph. ``stable`` ends with ``index --recluster`` and checks that
its tables then equal the rebuild's. Writes bench/results/update_stability.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    StandInServer,
    cli_command,
    copy_tree,
    database_path,
    git_state,
    header_block,
    index_run,
    init_project,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    median_run,
    product_env,
    results_name,
    spread,
    table_fingerprints,
    usage_totals,
    write_results,
)

# --- the corpus -----------------------------------------------------------------------------------

NEIGHBOURHOODS = [
    {
        "people": ["Mara Quell", "Tobias Venn", "Edda Rusk", "Jory Pell", "Alwen Crane"],
        "places": ["Gullhaven Harbour", "Brindle Street"],
        "orgs": ["Gullhaven Harbour Council"],
    },
    {
        "people": ["Osric Thane", "Lida Marrow", "Bram Hollis", "Ysolde Fenn", "Corin Ashby"],
        "places": ["Corran Reef", "Tarrow Channel"],
        "orgs": ["Saltmarsh Fishing Cooperative"],
    },
    {
        "people": ["Wenna Stroud", "Piran Lusk", "Hesper Vane", "Dunstan Kell", "Mirela Oakes"],
        "places": ["Wexmoor Lighthouse", "Ashcombe Point"],
        "orgs": ["Coastal Rescue Service"],
    },
    {
        "people": ["Tamsin Rook", "Gideon Hale", "Nell Braddock", "Ivo Pennick", "Sabine Morrow"],
        "places": ["Port Elsin", "Elsin Market Hall"],
        "orgs": ["Tidewater Shipping Company", "Elsin Savings Bank"],
    },
    {
        "people": ["Rowan Idris", "Clemency Tull", "Anselm Gray", "Perpetua Wick", "Fabian Lorne"],
        "places": ["Hollin Island", "Hollin Town"],
        "orgs": ["Marlow Institute"],
    },
]
EVENTS = ["the Winter Storm", "the Lantern Festival", "the Corran Accord", "the Harbour Meeting", "the Great Flood"]
SENTENCES = [
    "{p1} met {p2} at {place} to talk about {event}.",
    "{p1} works for the {org} and walks to {place} every morning.",
    "During {event}, {p1} helped {p2} haul the boats above {place}.",
    "The {org} hired {p1} after {event}.",
    "{p1} and {p2} argued about the accounts of the {org}.",
    "{p1} wrote to {p2} about the lamps of {place}.",
    "{p1} remembers {event} better than anyone in {place}.",
    "At {place}, {p1} taught {p2} how to read the tide tables of the {org}.",
    "{p1} lent money to {p2}, and the {org} still keeps the note.",
    "Since {event}, {p1} has avoided {place}.",
]
FILLER = [
    "The wind came from the west all week.",
    "Nobody could say how long the repairs would take.",
    "The nets were mended twice before the season began.",
    "It rained for three days and the lanes turned to mud.",
    "Fish prices fell again after the first good catch.",
    "The old pier groaned whenever the swell rose.",
]
NEWCOMER = "Ines Calder"
MINOR_FIRST = [
    "Agnes",
    "Bertil",
    "Cato",
    "Delphine",
    "Emrys",
    "Flora",
    "Gwilym",
    "Hanne",
    "Isolde",
    "Jasper",
    "Kit",
    "Leopold",
    "Maud",
    "Niamh",
    "Orla",
    "Pascoe",
    "Quentin",
    "Rhoswen",
    "Silas",
    "Thea",
    "Ulric",
    "Verity",
]
MINOR_LAST = [
    "Abbot",
    "Blythe",
    "Carrow",
    "Dunmore",
    "Ellery",
    "Frome",
    "Garrick",
    "Harrow",
    "Ingram",
    "Jessop",
    "Kestle",
    "Lanyon",
    "Mabey",
    "Nance",
    "Orchard",
    "Polglase",
    "Quiller",
    "Rendle",
    "Sennen",
    "Treloar",
]


def minor_people(count: int = 160) -> list[str]:
    """Occasional characters: each appears in a few neighbouring documents only."""
    rng = random.Random("minor-people")
    names = [f"{first} {last}" for first in MINOR_FIRST for last in MINOR_LAST]
    rng.shuffle(names)
    return names[:count]


MINOR_PEOPLE = minor_people()
MINOR_SENTENCES = [
    "{m} arrived from {place} with a cargo of salt.",
    "{p1} sold two nets to {m}.",
    "{m} asked {p1} for work on the boats of the {org}.",
    "{m} was seen near {place} on the night of {event}.",
    "{p1} and {m} shared a table at the inn.",
]


def _pick(rng: random.Random, home: dict[str, list[str]], kind: str) -> str:
    """Mostly from the document's neighbourhood, sometimes from another one (bridges between communities)."""
    source = home if rng.random() < 0.8 else rng.choice(NEIGHBOURHOODS)
    return rng.choice(source[kind])


def chronicle(index: int, newcomer: str | None = None) -> str:
    """Document ``index`` (1-based): 1-3 KB of sentences about one neighbourhood."""
    rng = random.Random(f"chronicle-{index}")
    home = NEIGHBOURHOODS[(index - 1) % len(NEIGHBOURHOODS)]
    target = rng.randint(1000, 3000)
    lines: list[str] = []
    size = 0
    while size < target:
        roll = rng.random()
        if roll < 0.15:
            sentence = rng.choice(FILLER)
        elif roll < 0.45:
            # minor characters of this document: a window that overlaps the neighbouring documents'
            m = MINOR_PEOPLE[(3 * (index - 1) + rng.randrange(5)) % len(MINOR_PEOPLE)]
            sentence = rng.choice(MINOR_SENTENCES).format(
                m=m,
                p1=_pick(rng, home, "people"),
                place=_pick(rng, home, "places"),
                org=_pick(rng, home, "orgs"),
                event=rng.choice(EVENTS),
            )
        else:
            p1 = newcomer if newcomer and rng.random() < 0.4 else _pick(rng, home, "people")
            p2 = _pick(rng, home, "people")
            while p2 == p1:
                p2 = _pick(rng, home, "people")
            sentence = rng.choice(SENTENCES).format(
                p1=p1, p2=p2, place=_pick(rng, home, "places"), org=_pick(rng, home, "orgs"), event=rng.choice(EVENTS)
            )
        sentence = sentence[0].upper() + sentence[1:]
        lines.append(sentence)
        size += len(sentence) + 1
    return "\n".join(lines) + "\n"


def write_corpus(input_dir: Path, count: int) -> list[int]:
    input_dir.mkdir(parents=True, exist_ok=True)
    sizes = []
    for i in range(1, count + 1):
        text = chronicle(i)
        (input_dir / f"chronicle_{i:03d}.txt").write_text(text, encoding="utf-8")
        sizes.append(len(text.encode("utf-8")))
    return sizes


def write_added_document(input_dir: Path, index: int) -> int:
    text = chronicle(index, newcomer=NEWCOMER)
    (input_dir / f"chronicle_{index:03d}.txt").write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


# --- measuring ------------------------------------------------------------------------------------


def graph_state(root: Path) -> dict[str, Any]:
    """What the update changes: entity descriptions and community memberships (to explain its calls)."""
    import duckdb

    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        entities = dict(conn.sql("select title, description from entities").fetchall())
        relationships = {
            (s, t): d for s, t, d in conn.sql("select source, target, description from relationships").fetchall()
        }
        communities = {
            (level, tuple(sorted(ids)))
            for level, ids in conn.sql("select level, entity_ids from communities").fetchall()
        }
        text_units = conn.sql("select count(*) from text_units").fetchall()[0][0]
        extractions = conn.sql("select * from graph_extractions").pl()
    return {
        "entities": entities,
        "relationships": relationships,
        "communities": communities,
        "text_units": text_units,
        "description_sets": description_sets(extractions),
    }


def description_sets(extractions) -> dict[Any, tuple[str, ...]]:
    """Items (entity titles, relationship pairs) with several distinct descriptions, and that set:
    exactly what the summary calls depend on (the product's own merge, a pure function)."""
    from graphrag_assets.index.graph_merge import merge_graph
    from graphrag_assets.index.summarize import distinct_descriptions

    merged = merge_graph(extractions)
    sets: dict[Any, tuple[str, ...]] = {}
    for title, descriptions in merged.entities.select("title", "descriptions").iter_rows():
        sets[title] = tuple(distinct_descriptions(descriptions or []))
    for source, target, descriptions in merged.relationships.select("source", "target", "descriptions").iter_rows():
        sets[(source, target)] = tuple(distinct_descriptions(descriptions or []))
    return {key: value for key, value in sets.items() if len(value) > 1}


def state_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    def changed(old: dict, new: dict) -> tuple[int, int]:
        added = sum(1 for k in new if k not in old)
        modified = sum(1 for k in new if k in old and old[k] != new[k])
        return added, modified

    ent_added, ent_modified = changed(before["entities"], after["entities"])
    rel_added, rel_modified = changed(before["relationships"], after["relationships"])
    return {
        "text_units_added": after["text_units"] - before["text_units"],
        "entities_after": len(after["entities"]),
        "entities_added": ent_added,
        "entities_description_changed": ent_modified,
        "relationships_after": len(after["relationships"]),
        "relationships_added": rel_added,
        "relationships_description_changed": rel_modified,
        "communities_after": len(after["communities"]),
        "summary_items_after": len(after["description_sets"]),
        "summary_items_new_or_changed": sum(
            1 for k, v in after["description_sets"].items() if before["description_sets"].get(k) != v
        ),
        "communities_before": len(before["communities"]),
        "communities_same_members": len(after["communities"] & before["communities"]),
    }


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def scenario(server: StandInServer, workdir: Path, latency_ms: float, documents: int, repeat: int) -> dict[str, Any]:
    """initial build once; then ``repeat`` updates (each on a copy of the initial project) and
    ``repeat`` rebuilds (each a fresh project without cache)."""
    server.set_latency(latency_ms)
    env = product_env(server)
    base = workdir / f"{latency_ms:g}ms_update_1"
    snapshot = workdir / f"{latency_ms:g}ms_initial_snapshot"

    init_project(base, env)
    sizes = write_corpus(base / "data" / "input", documents)
    initial = index_run(server, base, env)
    before = graph_state(base)
    copy_tree(base, snapshot)

    updates = []
    for r in range(repeat):
        root = base if r == 0 else workdir / f"{latency_ms:g}ms_update_{r + 1}"
        if r:
            copy_tree(snapshot, root)
        added_bytes = write_added_document(root / "data" / "input", documents + 1)
        updates.append(index_run(server, root, env))
    after = graph_state(base)

    rebuilds = []
    for r in range(repeat):
        root = workdir / f"{latency_ms:g}ms_rebuild_{r + 1}"
        init_project(root, env)
        write_corpus(root / "data" / "input", documents)
        write_added_document(root / "data" / "input", documents + 1)
        rebuilds.append(index_run(server, root, env))
        if r == 0:
            rebuild_tables = table_fingerprints(root)

    update, rebuild = median_run(updates), median_run(rebuilds)
    update["tables"] = table_fingerprints(base)
    rebuild["tables"] = rebuild_tables
    differing = sorted(t for t in update["tables"] if update["tables"][t] != rebuild["tables"][t])
    all_update = update["server"]["chat"] + update["server"]["embeddings"]
    all_rebuild = rebuild["server"]["chat"] + rebuild["server"]["embeddings"]
    tu, tr = usage_totals(update["usage"]), usage_totals(rebuild["usage"])
    return {
        "latency_ms": latency_ms,
        "repeat": repeat,
        "corpus": {
            "documents": documents,
            "bytes_min": min(sizes),
            "bytes_max": max(sizes),
            "bytes_total": sum(sizes),
            "added_document_bytes": added_bytes,
        },
        "initial": initial,
        "update": update,
        "rebuild": rebuild,
        "calls_identical_across_repeats": len(set(update["repeats"]["calls"])) == 1
        and len(set(rebuild["repeats"]["calls"])) == 1,
        "update_changed": state_delta(before, after),
        "update_equals_rebuild": not differing,
        "tables_differing": differing,
        "ratios": {
            "chat_calls": ratio(update["server"]["chat"], rebuild["server"]["chat"]),
            "all_calls": ratio(all_update, all_rebuild),
            "tokens": ratio(
                tu["prompt_tokens"] + tu["completion_tokens"], tr["prompt_tokens"] + tr["completion_tokens"]
            ),
            "wall": ratio(update["wall_s"], rebuild["wall_s"]),
            "cpu": ratio(update["cpu_s"], rebuild["cpu_s"]),
        },
    }


# --- output ---------------------------------------------------------------------------------------


def render(r: dict[str, Any], load_start: list[float], load_end: list[float]) -> str:
    out = [
        header_block(
            "bench_incremental: 50 documents + 1, update vs. full rebuild",
            r["command"],
            load_start,
            load_end,
            r["machine"],
        )
    ]
    first = r["scenarios"][0]
    corpus = first["corpus"]
    code = r["code"]
    out.append(
        f"code: commit {code['commit'][:12]}"
        + (
            f" with uncommitted changes to {', '.join(code['modified_tracked_files'])}"
            if code["modified_tracked_files"]
            else ""
        )
    )
    out.append(
        f"\ncorpus: {corpus['documents']} generated documents of {corpus['bytes_min']}-{corpus['bytes_max']} bytes "
        f"({corpus['bytes_total'] / 1000:.0f} KB), one text unit each; added document {corpus['added_document_bytes']} bytes. "
        f"llm.concurrency 25, standard method. Measured command per run: `{first['update']['command']}` (own process tree).\n"
    )
    rows = []
    for s in r["scenarios"]:
        for label in ("initial", "update", "rebuild"):
            run = s[label]
            t = usage_totals(run["usage"])
            rows.append(
                [
                    f"{s['latency_ms']:g}",
                    label,
                    len(run.get("repeats", {}).get("wall_s", [1])),
                    spread(run, "wall_s"),
                    spread(run, "cpu_s"),
                    spread(run, "peak_rss_mb"),
                    run["server"]["chat"],
                    run["server"]["embeddings"],
                    t["cached"],
                    t["prompt_tokens"],
                    t["completion_tokens"],
                ]
            )
    out.append(
        markdown_table(
            [
                "latency ms",
                "run",
                "times run",
                "wall s, median (range)",
                "CPU s",
                "peak RSS MB",
                "chat calls",
                "embedding calls",
                "answered from cache",
                "prompt+embedding tokens",
                "completion tokens",
            ],
            rows,
        )
    )

    out.append("\n### Headline: update / rebuild\n")
    rows = []
    for s in r["scenarios"]:
        q = s["ratios"]
        rows.append(
            [
                f"{s['latency_ms']:g}",
                q["chat_calls"],
                q["all_calls"],
                q["tokens"],
                q["wall"],
                q["cpu"],
                "yes" if s["update_equals_rebuild"] else f"NO: {', '.join(s['tables_differing'])}",
                "yes" if s["calls_identical_across_repeats"] else "NO",
            ]
        )
    out.append(
        markdown_table(
            [
                "latency ms",
                "chat calls",
                "all calls (chat + embedding)",
                "tokens",
                "wall time (medians)",
                "CPU time (medians)",
                "update's tables == rebuild's",
                "same calls in every repeat",
            ],
            rows,
        )
    )

    s = r["scenarios"][-1]
    out.append(f"\n### Where the calls went (latency {s['latency_ms']:g} ms)\n")
    purposes = sorted(set(s["update"]["usage"]) | set(s["rebuild"]["usage"]))
    rows = []
    for purpose in purposes:
        u = s["update"]["usage"].get(purpose, {})
        b = s["rebuild"]["usage"].get(purpose, {})
        rows.append(
            [
                purpose,
                u.get("calls", 0),
                u.get("cached", 0),
                b.get("calls", 0),
                ratio(u.get("calls", 0), b.get("calls", 0)),
            ]
        )
    out.append(
        markdown_table(
            ["purpose", "update: calls made", "update: answered from cache", "rebuild: calls made", "update / rebuild"],
            rows,
        )
    )
    d = s["update_changed"]
    summaries = s["update"]["usage"].get("summarize_descriptions", {}).get("calls", 0)
    out.append(
        f"\nSummaries: {d['summary_items_new_or_changed']} of {d['summary_items_after']} entities/relationships with several "
        f"descriptions have a new or changed description set after the update (each needs at least one call; more when its "
        f"descriptions exceed summarize.max_input_tokens); the update made {summaries} summary calls."
    )
    out.append(
        f"What the added document changed: {d['text_units_added']} text unit; entities {d['entities_added']} added and "
        f"{d['entities_description_changed']} with a new description (of {d['entities_after']}); relationships "
        f"{d['relationships_added']} added and {d['relationships_description_changed']} with a new description (of "
        f"{d['relationships_after']}); communities with exactly the same members as before: {d['communities_same_members']} of "
        f"{d['communities_after']} (before: {d['communities_before']})."
    )

    out.append("\n### Dagster steps, wall seconds (update vs. rebuild)\n")
    rows = []
    for s in r["scenarios"]:
        steps = list(dict.fromkeys([*s["rebuild"]["step_seconds"], *s["update"]["step_seconds"]]))
        for step in steps:
            cu = s["update"]["calls_by_step"].get(step, {})
            cr = s["rebuild"]["calls_by_step"].get(step, {})
            rows.append(
                [
                    f"{s['latency_ms']:g}",
                    step,
                    s["update"]["step_seconds"].get(step, ""),
                    cu.get("chat", 0) + cu.get("embeddings", 0),
                    s["rebuild"]["step_seconds"].get(step, ""),
                    cr.get("chat", 0) + cr.get("embeddings", 0),
                ]
            )
        rows.append(
            [
                f"{s['latency_ms']:g}",
                "**whole command**",
                s["update"]["wall_s"],
                s["update"]["server"]["chat"] + s["update"]["server"]["embeddings"],
                s["rebuild"]["wall_s"],
                s["rebuild"]["server"]["chat"] + s["rebuild"]["server"]["embeddings"],
            ]
        )
    out.append(markdown_table(["latency ms", "step", "update s", "update calls", "rebuild s", "rebuild calls"], rows))
    out.append("\n### Where the wall time went (median runs)\n")
    parts = [
        ("before the first Dagster run (start, imports, change detection)", "before_first_run_s"),
        ("inside runs, outside steps (Dagster run bookkeeping)", "run_bookkeeping_s"),
        ("inside steps", "steps_s"),
        ("between and after runs (usage report, exit)", "between_and_after_runs_s"),
        ("events written to the Dagster event log (count)", "dagster_events"),
    ]
    headers, columns = ["part"], []
    for s in r["scenarios"]:
        for label in ("update", "rebuild"):
            headers.append(f"{label} {s['latency_ms']:g} ms")
            columns.append(s[label]["wall_breakdown"])
    out.append(markdown_table(headers, [[label, *[col[k] for col in columns]] for label, k in parts]))
    out.append(f"\nTotal benchmark time {r['total_seconds']} s.")
    return "\n".join(out)


# --- update stability (issue 13): exact before / exact / stable ------------------------------------

TOWN_FIRST = [
    "Ada",
    "Basil",
    "Celia",
    "Dorian",
    "Elspeth",
    "Felix",
    "Greta",
    "Hugo",
    "Irene",
    "Julian",
    "Keziah",
    "Lionel",
    "Marian",
    "Nestor",
    "Olive",
    "Percy",
    "Rosalind",
    "Seth",
    "Tabitha",
    "Umberto",
    "Vesna",
    "Walter",
    "Xenia",
    "Yorick",
    "Zelda",
    "Amos",
    "Beatrix",
    "Cyril",
    "Dagny",
    "Ezra",
]
TOWN_LAST = [
    "Ashdown",
    "Brackett",
    "Calloway",
    "Drummond",
    "Everard",
    "Fairlie",
    "Gorst",
    "Hathaway",
    "Inchbald",
    "Jolliffe",
    "Kemble",
    "Lockyer",
    "Merriman",
    "Northcote",
    "Ormerod",
    "Pendry",
    "Quarles",
    "Rudd",
    "Sallow",
    "Thorne",
    "Underhill",
    "Vickery",
    "Whitlock",
    "Yarrow",
    "Zouch",
    "Amberley",
    "Bellamy",
    "Carstairs",
    "Dallow",
    "Esmond",
]
PLACE_STEMS = [
    "Ambleside",
    "Barrowfield",
    "Cragmoor",
    "Dunhallow",
    "Eastwick",
    "Foxmere",
    "Glenharrow",
    "Hawkridge",
    "Ivybridge",
    "Juniper",
    "Kingsmere",
    "Larkspur",
    "Marbury",
    "Netherby",
    "Oakhurst",
    "Pebblecombe",
    "Quarrydale",
    "Ravensholt",
    "Saltcote",
    "Thornbury",
    "Umberleigh",
    "Vantage",
    "Wolfsea",
    "Yelverton",
    "Zennor",
    "Alderney",
    "Blackwater",
    "Coldharbour",
    "Dimchurch",
    "Elmstead",
    "Fenwick",
    "Greyfriars",
    "Holloway",
    "Ironside",
    "Kettlewell",
    "Longstone",
    "Millbrook",
    "Northfleet",
    "Orchardleigh",
    "Pilgrim",
    "Redcliff",
    "Stillwater",
    "Tidemouth",
    "Underwood",
    "Westerhope",
    "Wrenfield",
    "Axmouth",
    "Brightling",
    "Corfe",
    "Dunmere",
    "Eskdale",
    "Farthing",
]
PLACE_KINDS = ["Quay", "Market", "Lighthouse", "Bridge", "Green", "Mill", "Harbour", "Chapel"]
ORG_KINDS = [
    "Fishing Cooperative",
    "Rowing Club",
    "Savings Bank",
    "Lifeboat Station",
    "Parish Council",
    "Brewery",
    "Ferry Company",
    "Choir",
]


def make_towns(count: int) -> list[dict[str, list[str]]]:
    """``count`` neighbourhoods with their own people, places and organization(s); minor characters
    shared with the next neighbourhood (a ring), so the graph is one component with local structure."""
    rng = random.Random("towns")
    people = [f"{first} {last}" for first in TOWN_FIRST for last in TOWN_LAST]
    rng.shuffle(people)
    stems = list(PLACE_STEMS)
    rng.shuffle(stems)
    towns = []
    for k in range(count):
        stem = stems[k % len(stems)] + (
            "" if k < len(stems) else f" {['North', 'South', 'Upper', 'Lower'][k // len(stems) % 4]}"
        )
        kinds = rng.sample(PLACE_KINDS, 2)
        towns.append(
            {
                "people": people[5 * k : 5 * k + 5],
                "places": [f"{stem} {kind}" for kind in kinds],
                "orgs": [f"{stem} {kind}" for kind in rng.sample(ORG_KINDS, 1 + (k % 2))],
                "minor": people[5 * count + 3 * k : 5 * count + 3 * k + 6],  # overlaps the next town's
            }
        )
    return towns


def town_document(index: int, towns: list[dict[str, list[str]]], variant: int = 0) -> str:
    """Document ``index`` (1-based) about neighbourhood ``(index - 1) % len(towns)``; 85% of the names
    from it, 15% from the two next to it; ``variant`` > 0 gives an edited version of the same document."""
    rng = random.Random(f"town-doc-{index}-{variant}")
    home_index = (index - 1) % len(towns)
    home = towns[home_index]
    near = [towns[(home_index - 1) % len(towns)], towns[(home_index + 1) % len(towns)]]

    def pick(kind: str) -> str:
        return rng.choice((home if rng.random() < 0.85 else rng.choice(near))[kind])

    target = rng.randint(1000, 3000)
    lines: list[str] = []
    size = 0
    while size < target:
        roll = rng.random()
        if roll < 0.15:
            sentence = rng.choice(FILLER)
        elif roll < 0.40:
            sentence = rng.choice(MINOR_SENTENCES).format(
                m=rng.choice(home["minor"]),
                p1=pick("people"),
                place=pick("places"),
                org=pick("orgs"),
                event=rng.choice(EVENTS),
            )
        else:
            p1, p2 = pick("people"), pick("people")
            while p2 == p1:
                p2 = pick("people")
            sentence = rng.choice(SENTENCES).format(
                p1=p1, p2=p2, place=pick("places"), org=pick("orgs"), event=rng.choice(EVENTS)
            )
        sentence = sentence[0].upper() + sentence[1:]
        lines.append(sentence)
        size += len(sentence) + 1
    return "\n".join(lines) + "\n"


def town_name(index: int) -> str:
    return f"town_{index:04d}.txt"


def edit_plan(documents: int, edits: int) -> list[tuple[str, int]]:
    """``edits`` single-document edits: add, change and delete in turn, documents chosen at random."""
    rng = random.Random("edits")
    present = list(range(1, documents + 1))
    plan: list[tuple[str, int]] = []
    next_index = documents + 1
    for i in range(edits):
        action = ("add", "change", "delete")[i % 3]
        if action == "add":
            plan.append((action, next_index))
            present.append(next_index)
            next_index += 1
        else:
            target = rng.choice(present)
            plan.append((action, target))
            if action == "delete":
                present.remove(target)
    return plan


def apply_edit(input_dir: Path, towns: list[dict[str, list[str]]], action: str, index: int, step: int) -> None:
    path = input_dir / town_name(index)
    if action == "delete":
        path.unlink()
    else:
        path.write_text(town_document(index, towns, variant=step if action == "change" else 0), encoding="utf-8")


def stored_drift(root: Path) -> dict[str, float]:
    """Modularity of the stored level-0 communities vs. a fresh clustering (current code, default settings)
    of the stored graph, and the drift between them, as :mod:`stable_communities` defines it."""
    import duckdb

    from graphrag_assets.index.communities import hierarchical_leiden, partition_modularity
    from graphrag_assets.index.stable_communities import modularity_drift, previous_assignments

    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        entities = conn.sql("select id, title from entities").pl()
        relationships = conn.sql("select source, target, weight from relationships").pl()
        communities = conn.sql("select community, level, parent, entity_ids from communities").pl()
    known = entities["title"].implode()
    edges = relationships.filter(relationships["source"].is_in(known) & relationships["target"].is_in(known))
    kept = partition_modularity(edges, previous_assignments(communities, entities))
    fresh = partition_modularity(edges, hierarchical_leiden(edges))
    return {
        "modularity": round(kept, 5),
        "fresh_modularity": round(fresh, 5),
        "drift": round(modularity_drift(fresh, kept), 5),
    }


def report_count(root: Path) -> int:
    import duckdb

    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        return conn.sql("select count(*) from community_reports").fetchall()[0][0]


def run_tokens(run: dict[str, Any]) -> int:
    totals = usage_totals(run["usage"])
    return totals["prompt_tokens"] + totals["completion_tokens"]


def entity_rows(root: Path) -> dict[str, tuple[Any, ...]]:
    """Entity id -> (description, degree): what an entity contributes to the report prompts."""
    import duckdb

    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        return {row[0]: row[1:] for row in conn.sql("select id, description, degree from entities").fetchall()}


def touched_communities(root: Path, before: dict[str, tuple[Any, ...]]) -> int:
    """Stored communities holding an entity that is new or whose description or degree changed: their
    prompts change whatever the clustering does, so no update mode can reuse their reports."""
    import duckdb
    import polars as pl

    after = entity_rows(root)
    touched = pl.Series([entity for entity, row in after.items() if before.get(entity) != row], dtype=pl.String)
    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        communities = conn.sql("select entity_ids from communities").pl()
    return communities.filter(pl.col("entity_ids").list.eval(pl.element().is_in(touched.implode())).list.any()).height


def update_record(server: StandInServer, root: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    """One measured update: reports regenerated (report calls made) / stored, tokens, drift, the product's reasons."""
    before = entity_rows(root)
    run = index_run(server, root, env, *extra, with_calls=False)
    return {
        "touched_communities": touched_communities(root, before),
        "reports_regenerated": run["usage"].get("community_report", {}).get("calls", 0),
        "reports_total": report_count(root),
        "tokens": run_tokens(run),
        "report_tokens": run["usage"].get("community_report", {}).get("prompt_tokens", 0)
        + run["usage"].get("community_report", {}).get("completion_tokens", 0),
        "product_reports": run["reports"],
        "wall_s": run["wall_s"],
        **stored_drift(root),
    }


def product_clustering(root: Path, env: dict[str, str]) -> dict[str, Any]:
    """How the product says it clustered the last run (``status --json``): strategy, reason, its drift."""
    status = subprocess.run(
        cli_command("status", "--root", str(root), "--json"), env=env, capture_output=True, text=True, check=True
    )
    return json.loads(status.stdout).get("communities", {}).get("last_run", {})


def set_update_mode(root: Path, mode: str) -> None:
    """``communities.update`` in the project's graphrag.yaml (as a user would edit it)."""
    path = root / "graphrag.yaml"
    text = path.read_text(encoding="utf-8")
    if "  update: exact" in text:
        text = text.replace("  update: exact", f"  update: {mode}", 1)
    else:
        text = text.replace("communities:\n", f"communities:\n  update: {mode}\n", 1)
    path.write_text(text, encoding="utf-8")


def before_env(env: dict[str, str], source: Path | None) -> dict[str, str]:
    """The product environment running the code of ``source`` (a checkout) instead of this one."""
    if source is None:
        return env
    return {**env, "PYTHONPATH": str(source) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")}


def export_before(commit: str, target: Path) -> Path:
    """The repository at ``commit`` (``git archive``), for the exact-before mode."""
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", commit], cwd=Path(__file__).resolve().parents[1], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


@dataclass
class StabilityRun:
    """One corpus measured under several update modes: how to build it, which edits follow."""

    name: str
    write_initial: Callable[[Path], None]
    edits: list[tuple[str, Callable[[Path], None]]]  # (label, apply to the input folder)
    settings_text: str | None = None  # graphrag.yaml to use instead of the init template


def stability_scenario(
    server: StandInServer, workdir: Path, run: StabilityRun, modes: list[str], before_source: Path | None
) -> dict[str, Any]:
    """Initial index per code version, then every edit indexed in turn per mode; one rebuild per code version."""
    env = product_env(server)
    envs = {"exact-before": before_env(env, before_source), "exact": env, "stable": env}
    roots = {mode: workdir / f"{run.name}_{mode}" for mode in modes}
    initial: dict[str, Any] = {}
    for mode in modes:
        if mode == "stable" and "exact" in modes:
            continue
        root = roots[mode]
        init_project(root, envs[mode])
        if run.settings_text:
            (root / "graphrag.yaml").write_text(run.settings_text, encoding="utf-8")
        run.write_initial(root / "data" / "input")
        initial[mode] = index_run(server, root, envs[mode], with_calls=False)
        print(f"  {run.name}: initial index ({mode}) {initial[mode]['wall_s']:.1f} s", flush=True)
    if "stable" in modes:
        if "exact" in modes:
            copy_tree(roots["exact"], roots["stable"])  # stable mode starts from the same index
            initial["stable"] = initial["exact"]
        set_update_mode(roots["stable"], "stable")
    steps: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for number, (label, apply) in enumerate(run.edits, start=1):
        for mode in modes:
            apply(roots[mode] / "data" / "input")
            record = update_record(server, roots[mode], envs[mode])
            if mode == "stable":
                record["clustering"] = product_clustering(roots[mode], envs[mode])
            steps[mode].append({"edit": number, "label": label, **record})
            print(
                f"  {run.name} edit {number} ({label}) {mode}: {record['reports_regenerated']}/{record['reports_total']} reports, "
                f"drift {record['drift']:.4f}, {record['wall_s']:.1f} s",
                flush=True,
            )
    rebuilds: dict[str, dict[str, Any]] = {}
    final_input = roots[modes[0]] / "data" / "input"
    for version in dict.fromkeys("before" if mode == "exact-before" else "current" for mode in modes):
        root = workdir / f"{run.name}_rebuild_{version}"
        mode_env = envs["exact-before"] if version == "before" else env
        init_project(root, mode_env)
        if run.settings_text:
            (root / "graphrag.yaml").write_text(run.settings_text, encoding="utf-8")
        shutil.rmtree(root / "data" / "input")
        copy_tree(final_input, root / "data" / "input")
        built = index_run(server, root, mode_env, with_calls=False)
        rebuilds[version] = {
            "tokens": run_tokens(built),
            "reports": report_count(root),
            "wall_s": built["wall_s"],
            "tables": table_fingerprints(root),
            "usage": built["usage"],
        }
        print(
            f"  {run.name}: rebuild ({version}) {built['wall_s']:.1f} s, {rebuilds[version]['reports']} reports",
            flush=True,
        )
    for mode in modes:
        rebuild = rebuilds["before" if mode == "exact-before" else "current"]
        for step in steps[mode]:
            step["tokens_vs_rebuild"] = ratio(step["tokens"], rebuild["tokens"])
            step["regenerated_share"] = ratio(step["reports_regenerated"], step["reports_total"])
    result: dict[str, Any] = {
        "name": run.name,
        "edits": [label for label, _ in run.edits],
        "modes": modes,
        "initial": {m: {"wall_s": r["wall_s"], "tokens": run_tokens(r)} for m, r in initial.items()},
        "steps": steps,
        "rebuilds": rebuilds,
    }
    if "stable" in modes and "exact" in modes:
        for mode in ("exact", "stable"):
            result.setdefault("equals_rebuild", {})[mode] = (
                table_fingerprints(roots[mode]) == rebuilds["current"]["tables"]
            )
        recluster = update_record(server, roots["stable"], env, "--recluster")
        result["stable_recluster"] = {
            **recluster,
            "equals_rebuild": table_fingerprints(roots["stable"]) == rebuilds["current"]["tables"],
        }
        print(
            f"  {run.name}: stable after --recluster equals rebuild: {result['stable_recluster']['equals_rebuild']}",
            flush=True,
        )
    return result


def carol_run() -> StabilityRun | None:
    """*A Christmas Carol* and the 237-word document of the MS comparison (None without ../shared)."""
    from msgraphrag_compare import OUR_SETTINGS, UPDATE_DOCUMENT

    book = Path(__file__).resolve().parents[2] / "shared" / "data" / "nano-graphrag" / "tests" / "mock_data.txt"
    if not book.exists():
        return None

    def initial(input_dir: Path) -> None:
        shutil.copyfile(book, input_dir / "book.txt")

    def add(input_dir: Path) -> None:
        (input_dir / "letter.txt").write_text(UPDATE_DOCUMENT, encoding="utf-8")

    return StabilityRun("carol", initial, [("add a 237-word document", add)], settings_text=OUR_SETTINGS)


def edits_run(documents: int, towns_count: int, edits: int) -> StabilityRun:
    towns = make_towns(towns_count)

    def initial(input_dir: Path) -> None:
        for i in range(1, documents + 1):
            (input_dir / town_name(i)).write_text(town_document(i, towns), encoding="utf-8")

    def edit(action: str, index: int, step: int) -> Callable[[Path], None]:
        return lambda input_dir: apply_edit(input_dir, towns, action, index, step)

    plan = [
        (f"{action} {town_name(index)}", edit(action, index, step))
        for step, (action, index) in enumerate(edit_plan(documents, edits), start=1)
    ]
    return StabilityRun(f"edits{documents}", initial, plan)


def render_stability(results: dict[str, Any], load_start: list[float], load_end: list[float]) -> str:
    out = [
        header_block(
            "bench_incremental: update stability (exact before / exact / stable)",
            results["command"],
            load_start,
            load_end,
            results["machine"],
        )
    ]
    for scenario_result in results["stability"]:
        modes = scenario_result["modes"]
        out.append(f"\n### {scenario_result['name']}\n")
        rows = []
        for number, label in enumerate(scenario_result["edits"], start=1):
            row: list[Any] = [number, label]
            for mode in modes:
                step = scenario_result["steps"][mode][number - 1]
                row += [
                    f"{step['reports_regenerated']}/{step['reports_total']} ({step['regenerated_share']:.1%})",
                    step["touched_communities"],
                    f"{step['tokens_vs_rebuild']:.3f}",
                    f"{step['drift']:.2%}",
                ]
            rows.append(row)
        columns = ("reports regenerated", "touched communities", "tokens / rebuild", "drift")
        headers = ["#", "edit"] + [f"{mode}: {col}" for mode in modes for col in columns]
        out.append(markdown_table(headers, rows))
        summary = []
        for mode in modes:
            steps = scenario_result["steps"][mode]
            shares = [s["regenerated_share"] for s in steps]
            floor = [s["touched_communities"] / s["reports_total"] for s in steps]
            summary.append(
                [
                    mode,
                    f"{statistics.mean(shares):.1%}",
                    f"{max(shares):.1%}",
                    f"{statistics.mean(floor):.1%}",
                    f"{statistics.mean(s['tokens_vs_rebuild'] for s in steps):.3f}",
                    f"{steps[-1]['drift']:.2%}",
                    f"{max(s['drift'] for s in steps):.2%}",
                ]
            )
        out.append("")
        out.append(
            markdown_table(
                [
                    "mode",
                    "mean regenerated share",
                    "max",
                    "mean touched share (floor)",
                    "mean tokens / rebuild",
                    "drift after last edit",
                    "max drift",
                ],
                summary,
            )
        )
        if "stable" in scenario_result["steps"]:
            out.append(
                "\nstable mode, clustering per edit (the product's own record): "
                + "; ".join(
                    f"{s['edit']}: {s['clustering'].get('clustering')} ({s['clustering'].get('clustering_reason')}, drift {float(s['clustering'].get('drift') or 0):.2%})"
                    for s in scenario_result["steps"]["stable"]
                )
            )
        reasons = scenario_result["steps"].get("stable", scenario_result["steps"].get("exact", []))
        if reasons and reasons[-1]["product_reports"]:
            out.append(
                "\nproduct's reasons per edit ("
                + ("stable" if "stable" in scenario_result["steps"] else "exact")
                + "): "
                + "; ".join(
                    f"{s['edit']}: " + ", ".join(f"{k} {v}" for k, v in s["product_reports"].get("reasons", {}).items())
                    for s in reasons
                )
            )
        if "stable_recluster" in scenario_result:
            r = scenario_result["stable_recluster"]
            out.append(
                f"\nstable, then `index --recluster`: {r['reports_regenerated']}/{r['reports_total']} reports regenerated; tables equal the rebuild's: "
                f"{'yes' if r['equals_rebuild'] else 'NO'}; exact mode's final tables equal the rebuild's: "
                f"{'yes' if scenario_result['equals_rebuild']['exact'] else 'NO'}"
            )
    out.append(f"\nTotal benchmark time {results['total_seconds']} s.")
    return "\n".join(out)


def stability_main(args: argparse.Namespace) -> int:
    machine = machine_info()
    load_start = load_average()
    started = time.monotonic()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_stability_"))
    workdir.mkdir(parents=True, exist_ok=True)
    before_source = (
        export_before(args.before_commit, workdir / "before_source") if "exact-before" in args.modes else None
    )
    runs = []
    if args.scenario in ("carol", "stability"):
        carol = carol_run()
        if carol is None:
            print("skipping the Carol scenario: ../shared/data/nano-graphrag/tests/mock_data.txt is absent")
        else:
            runs.append(carol)
    if args.scenario in ("edits", "stability"):
        runs.append(edits_run(args.edit_documents, args.towns, args.edits))
    results: dict[str, Any] = {
        "benchmark": "update_stability",
        "command": invocation(),
        "machine": machine,
        "code": git_state(),
        "before_commit": args.before_commit,
        "stability": [],
    }
    with served(workdir, args) as server:
        for run in runs:
            results["stability"].append(stability_scenario(server, workdir, run, args.modes, before_source))
    name = args.results if args.results != "incremental.json" else "update_stability.json"
    return report(results, (started, load_start), render_stability, name)


@contextlib.contextmanager
def served(workdir: Path, args: argparse.Namespace) -> Iterator[StandInServer]:
    """The stand-in server for the run; the projects are removed afterwards unless kept."""
    server = StandInServer(workdir, latency_ms=0)
    try:
        yield server
    finally:
        server.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def report(
    results: dict[str, Any], start: tuple[float, list[float]], render_results: Callable[..., str], name: str
) -> int:
    """Add the run's duration and load, print the rendering and write ``bench/results/<name>`` (unless '-')."""
    started, load_start = start
    results["total_seconds"] = round(time.monotonic() - started, 1)
    load_end = load_average()
    results["load_average"] = {"start": load_start, "end": load_end}
    print(render_results(results, load_start, load_end))
    if name != "-":
        path = write_results(name, results)
        print(f"\nwritten: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 200.0])
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument(
        "--repeat", type=int, default=3, help="updates and rebuilds measured per latency (medians reported)"
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where the projects go (default: a new temporary folder)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the projects after the run")
    parser.add_argument(
        "--results",
        type=results_name,
        default="incremental.json",
        help="file name under bench/results/ ('-': print only)",
    )
    parser.add_argument(
        "--scenario",
        choices=["latency", "carol", "edits", "stability"],
        default="latency",
        help="latency: 50 documents + 1 (above); carol / edits / stability (both): update stability per mode",
    )
    parser.add_argument(
        "--modes", nargs="+", choices=["exact-before", "exact", "stable"], default=["exact-before", "exact", "stable"]
    )
    parser.add_argument(
        "--before-commit", default="b7af436", help="the code measured as exact-before (default: where issue 13 started)"
    )
    parser.add_argument("--edit-documents", type=int, default=500)
    parser.add_argument(
        "--towns", type=int, default=50, help="neighbourhoods of the generated corpus of the edits scenario"
    )
    parser.add_argument("--edits", type=int, default=10)
    args = parser.parse_args()
    if args.scenario != "latency":
        return stability_main(args)

    machine = machine_info()
    load_start = load_average()
    started = time.monotonic()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_incremental_"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "benchmark": "incremental",
        "command": invocation(),
        "machine": machine,
        "code": git_state(),
        "scenarios": [],
    }
    with served(workdir, args) as server:
        for latency in args.latency_ms:
            results["scenarios"].append(scenario(server, workdir, latency, args.documents, args.repeat))
    return report(results, (started, load_start), render, args.results)


if __name__ == "__main__":
    sys.exit(main())
