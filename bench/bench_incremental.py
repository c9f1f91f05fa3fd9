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
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    StandInServer,
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
MINOR_FIRST = ["Agnes", "Bertil", "Cato", "Delphine", "Emrys", "Flora", "Gwilym", "Hanne", "Isolde", "Jasper", "Kit",
               "Leopold", "Maud", "Niamh", "Orla", "Pascoe", "Quentin", "Rhoswen", "Silas", "Thea", "Ulric", "Verity"]
MINOR_LAST = ["Abbot", "Blythe", "Carrow", "Dunmore", "Ellery", "Frome", "Garrick", "Harrow", "Ingram", "Jessop",
              "Kestle", "Lanyon", "Mabey", "Nance", "Orchard", "Polglase", "Quiller", "Rendle", "Sennen", "Treloar"]


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
                m=m, p1=_pick(rng, home, "people"), place=_pick(rng, home, "places"), org=_pick(rng, home, "orgs"),
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
        relationships = {(s, t): d for s, t, d in conn.sql("select source, target, description from relationships").fetchall()}
        communities = {
            (level, tuple(sorted(ids))) for level, ids in conn.sql("select level, entity_ids from communities").fetchall()
        }
        text_units = conn.sql("select count(*) from text_units").fetchall()[0][0]
        extractions = conn.sql("select * from graph_extractions").pl()
    return {"entities": entities, "relationships": relationships, "communities": communities, "text_units": text_units,
            "description_sets": description_sets(extractions)}


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
        "summary_items_new_or_changed": sum(1 for k, v in after["description_sets"].items() if before["description_sets"].get(k) != v),
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
        "corpus": {"documents": documents, "bytes_min": min(sizes), "bytes_max": max(sizes), "bytes_total": sum(sizes),
                   "added_document_bytes": added_bytes},
        "initial": initial,
        "update": update,
        "rebuild": rebuild,
        "calls_identical_across_repeats": len(set(update["repeats"]["calls"])) == 1 and len(set(rebuild["repeats"]["calls"])) == 1,
        "update_changed": state_delta(before, after),
        "update_equals_rebuild": not differing,
        "tables_differing": differing,
        "ratios": {
            "chat_calls": ratio(update["server"]["chat"], rebuild["server"]["chat"]),
            "all_calls": ratio(all_update, all_rebuild),
            "tokens": ratio(tu["prompt_tokens"] + tu["completion_tokens"], tr["prompt_tokens"] + tr["completion_tokens"]),
            "wall": ratio(update["wall_s"], rebuild["wall_s"]),
            "cpu": ratio(update["cpu_s"], rebuild["cpu_s"]),
        },
    }


# --- output ---------------------------------------------------------------------------------------


def render(r: dict[str, Any], load_start: list[float], load_end: list[float]) -> str:
    out = [header_block("bench_incremental: 50 documents + 1, update vs. full rebuild", r["command"], load_start, load_end, r["machine"])]
    first = r["scenarios"][0]
    corpus = first["corpus"]
    code = r["code"]
    out.append(f"code: commit {code['commit'][:12]}" + (f" with uncommitted changes to {', '.join(code['modified_tracked_files'])}" if code["modified_tracked_files"] else ""))
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
            rows.append([f"{s['latency_ms']:g}", label, len(run.get("repeats", {}).get("wall_s", [1])), spread(run, "wall_s"),
                         spread(run, "cpu_s"), spread(run, "peak_rss_mb"), run["server"]["chat"],
                         run["server"]["embeddings"], t["cached"], t["prompt_tokens"], t["completion_tokens"]])
    out.append(markdown_table(["latency ms", "run", "times run", "wall s, median (range)", "CPU s", "peak RSS MB", "chat calls", "embedding calls",
                               "answered from cache", "prompt+embedding tokens", "completion tokens"], rows))

    out.append("\n### Headline: update / rebuild\n")
    rows = []
    for s in r["scenarios"]:
        q = s["ratios"]
        rows.append([f"{s['latency_ms']:g}", q["chat_calls"], q["all_calls"], q["tokens"], q["wall"], q["cpu"],
                     "yes" if s["update_equals_rebuild"] else f"NO: {', '.join(s['tables_differing'])}",
                     "yes" if s["calls_identical_across_repeats"] else "NO"])
    out.append(markdown_table(["latency ms", "chat calls", "all calls (chat + embedding)", "tokens", "wall time (medians)", "CPU time (medians)",
                               "update's tables == rebuild's", "same calls in every repeat"], rows))

    s = r["scenarios"][-1]
    out.append(f"\n### Where the calls went (latency {s['latency_ms']:g} ms)\n")
    purposes = sorted(set(s["update"]["usage"]) | set(s["rebuild"]["usage"]))
    rows = []
    for purpose in purposes:
        u = s["update"]["usage"].get(purpose, {})
        b = s["rebuild"]["usage"].get(purpose, {})
        rows.append([purpose, u.get("calls", 0), u.get("cached", 0), b.get("calls", 0), ratio(u.get("calls", 0), b.get("calls", 0))])
    out.append(markdown_table(["purpose", "update: calls made", "update: answered from cache", "rebuild: calls made", "update / rebuild"], rows))
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
            rows.append([f"{s['latency_ms']:g}", step, s["update"]["step_seconds"].get(step, ""), cu.get("chat", 0) + cu.get("embeddings", 0),
                         s["rebuild"]["step_seconds"].get(step, ""), cr.get("chat", 0) + cr.get("embeddings", 0)])
        rows.append([f"{s['latency_ms']:g}", "**whole command**", s["update"]["wall_s"], s["update"]["server"]["chat"] + s["update"]["server"]["embeddings"],
                     s["rebuild"]["wall_s"], s["rebuild"]["server"]["chat"] + s["rebuild"]["server"]["embeddings"]])
    out.append(markdown_table(["latency ms", "step", "update s", "update calls", "rebuild s", "rebuild calls"], rows))
    out.append("\n### Where the wall time went (median runs)\n")
    parts = [("before the first Dagster run (start, imports, change detection)", "before_first_run_s"),
             ("inside runs, outside steps (Dagster run bookkeeping)", "run_bookkeeping_s"),
             ("inside steps", "steps_s"), ("between and after runs (usage report, exit)", "between_and_after_runs_s"),
             ("events written to the Dagster event log (count)", "dagster_events")]
    headers, columns = ["part"], []
    for s in r["scenarios"]:
        for label in ("update", "rebuild"):
            headers.append(f"{label} {s['latency_ms']:g} ms")
            columns.append(s[label]["wall_breakdown"])
    out.append(markdown_table(headers, [[label, *[col[k] for col in columns]] for label, k in parts]))
    out.append(f"\nTotal benchmark time {r['total_seconds']} s.")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 200.0])
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="updates and rebuilds measured per latency (medians reported)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the projects go (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the projects after the run")
    parser.add_argument("--results", default="incremental.json", help="file name under bench/results/ ('-': print only)")
    args = parser.parse_args()

    machine = machine_info()
    load_start = load_average()
    started = time.monotonic()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_incremental_"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"benchmark": "incremental", "command": invocation(), "machine": machine, "code": git_state(),
                               "scenarios": []}
    server = StandInServer(workdir, latency_ms=0)
    try:
        for latency in args.latency_ms:
            results["scenarios"].append(scenario(server, workdir, latency, args.documents, args.repeat))
    finally:
        server.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    results["total_seconds"] = round(time.monotonic() - started, 1)
    load_end = load_average()
    results["load_average"] = {"start": load_start, "end": load_end}
    print(render(results, load_start, load_end))
    if args.results != "-":
        path = write_results(args.results, results)
        print(f"\nwritten: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
