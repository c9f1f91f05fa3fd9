"""One large text file, offline: wall time, CPU and peak RSS of `index` as the file grows.

    python bench/bench_large_file.py [--megabytes 30] [--workdir /tmp/graphrag-bench]

A user drops one big file (a book collection, a log export) into data/input. The file is
generated (fixed seed): chapters of template sentences, each chapter about one of 100
neighbourhoods of recurring people, places and organizations (3,000 people in all), so the
noun-phrase graph grows the way a real corpus's does rather than repeating one book. `graphrag-assets index` runs offline (no OPENAI_*
variable: method nlp) under the measuring wrapper of ``bench/common.py`` (wall, CPU, peak RSS of
the largest process). Sizes: 1 MB as the anchor and ``--megabytes``; the ratio of the two is the
growth. Results: markdown on stdout and ``bench/results/large_file.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_nlp import index_counts, offline_env  # noqa: E402
from bench_scale import TreeRss  # noqa: E402
from common import (  # noqa: E402
    cli_command,
    dagster_timeline,
    git_state,
    header_block,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    measure,
    write_results,
)

FIRST = [
    "Ada",
    "Bram",
    "Cora",
    "Dmitri",
    "Elin",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kaia",
    "Leon",
    "Mira",
    "Nils",
    "Odile",
    "Pavel",
    "Quinn",
    "Rosa",
    "Soren",
    "Tilde",
    "Ulla",
    "Viktor",
    "Wren",
    "Xavi",
    "Yara",
    "Zeno",
]
LAST = [
    "Abbott",
    "Berg",
    "Castell",
    "Dahl",
    "Ekholm",
    "Falk",
    "Grau",
    "Hale",
    "Ibsen",
    "Jovic",
    "Kessler",
    "Lund",
    "Marek",
    "Nystrom",
    "Orsini",
    "Petrov",
    "Quell",
    "Rask",
    "Strand",
    "Tamm",
    "Ulvaeus",
    "Varga",
    "Wolff",
    "Yilmaz",
    "Zorn",
]
PLACE_ROOTS = [
    "Vell",
    "Harrow",
    "Kest",
    "Brim",
    "Gull",
    "Tarn",
    "Ash",
    "Wick",
    "Dun",
    "Mor",
    "Fen",
    "Oak",
    "Sal",
    "Thorn",
    "Wend",
    "Ys",
]
PLACE_ENDS = [
    "mouth",
    "gate",
    "ford",
    "holm",
    "by",
    "stead",
    "wick",
    "haven",
    "moor",
    "dale",
    "port",
    "field",
    "bridge",
    "ness",
    "vik",
    "ton",
    "mere",
    "hollow",
    "reach",
    "cliff",
    "marsh",
    "brook",
    "shaw",
    "combe",
    "heath",
]
ORG_KINDS = [
    "Council",
    "Cooperative",
    "Institute",
    "Freight Lines",
    "Harbour Authority",
    "Bank",
    "Society",
    "Foundry",
    "Guild",
    "Trust",
]
TEMPLATES = [
    "{p} met {q} in {l} to discuss the plans of the {o}.",
    "In {l}, {p} worked for the {o} for many years before moving on.",
    "The {o} hired {p} after the storm damaged the harbour at {l}.",
    "{p} wrote a long letter to {q} about the accounts of the {o}.",
    "According to {q}, the {o} owed money to several traders in {l}.",
    "{p} and {q} sailed from {l} with a cargo of timber and salt.",
    "The meeting of the {o} in {l} ended without an agreement, and {p} left early.",
    "{p} remembered the winter when the river at {l} froze and {q} lost the mill.",
]


def generate(size_bytes: int, seed: int = 7) -> str:
    """Chapters of template sentences, each about one neighbourhood of people, places and firms.

    A chapter (20 paragraphs) keeps to one of 100 neighbourhoods (30 people, 4 places, 3
    organizations), with one name in twenty drawn from anywhere, so a text unit names a few dozen
    things, as a chapter of a book does, and the graph has communities to find.
    """
    rng = random.Random(seed)
    people = [f"{f} {initial}. {last}" for initial in "ABCDE" for f in FIRST for last in LAST][:3000]
    places = [f"{r}{e}" for r in PLACE_ROOTS for e in PLACE_ENDS][:400]
    orgs = [f"{place} {kind}" for place in places[:30] for kind in ORG_KINDS][:300]
    neighbourhoods = [
        (people[n * 30 : (n + 1) * 30], places[n * 4 : (n + 1) * 4], orgs[n * 3 : (n + 1) * 3]) for n in range(100)
    ]
    parts: list[str] = []
    size = 0
    while size < size_bytes:
        local_people, local_places, local_orgs = rng.choice(neighbourhoods)

        def person(local_people: list[str] = local_people) -> str:
            return rng.choice(people) if rng.random() < 0.05 else rng.choice(local_people)

        for _ in range(20):
            sentences = [
                rng.choice(TEMPLATES).format(
                    p=person(), q=person(), l=rng.choice(local_places), o=rng.choice(local_orgs)
                )
                for _ in range(rng.randint(3, 7))
            ]
            paragraph = " ".join(sentences) + "\n\n"
            parts.append(paragraph)
            size += len(paragraph.encode("utf-8"))
    return "".join(parts)


def run_size(workdir: Path, megabytes: float) -> dict[str, Any]:
    root = workdir / f"large-{megabytes:g}mb"
    if root.exists():
        shutil.rmtree(root)
    (root / "data" / "input").mkdir(parents=True)
    text = generate(int(megabytes * 1_000_000))
    (root / "data" / "input" / "big.txt").write_text(text, encoding="utf-8")
    load_start = load_average()
    with TreeRss() as rss:
        measured = measure(cli_command("index", "--root", str(root), "--json"), env=offline_env())
    load_end = load_average()
    run_ids = [run["run_id"] for run in json.loads(measured.stdout)["runs"]]
    steps = dagster_timeline(root, run_ids)["steps"]
    return {
        "megabytes": megabytes,
        **measured.figures(),
        "load_average_start": load_start,
        "load_average_end": load_end,
        "step_largest_hwm_mb": rss.peaks_by_step(steps, column=3),  # steps in the order they ran
        "counts": index_counts(root),
    }


def step_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per step, in the order the steps ran: the largest high-water mark of a process while
    it ran, at each size.

    A single file runs every step in the CLI's own process, so a step's figure is the process's peak
    so far; the step where the figure first rises to the command's peak is where the memory goes.
    """
    steps = list(dict.fromkeys(step for r in runs for step in r["step_largest_hwm_mb"]))
    return [[step, *(r["step_largest_hwm_mb"].get(step, "") for r in runs)] for step in steps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=30.0)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "graphrag-bench")
    args = parser.parse_args()
    machine, load_start = machine_info(), load_average()
    runs = [run_size(args.workdir, size) for size in (1.0, args.megabytes)]
    load_end = load_average()
    print(header_block("one large file, offline index", invocation(), load_start, load_end, machine))
    print()
    print(
        markdown_table(
            ["input MB", "wall s", "CPU s", "peak RSS MB", "RSS / input", "text units", "entities", "relationships"],
            [
                [
                    r["megabytes"],
                    r["wall_s"],
                    r["cpu_s"],
                    r["peak_rss_mb"],
                    round(r["peak_rss_mb"] / r["megabytes"], 1),
                    r["counts"]["text_units"],
                    r["counts"]["entities"],
                    r["counts"]["relationships"],
                ]
                for r in runs
            ],
        )
    )
    print()
    print(markdown_table(["step: largest VmHWM MB at", *(f"{r['megabytes']:g} MB" for r in runs)], step_rows(runs)))
    path = write_results(
        "large_file.json",
        {
            "machine": machine,
            "git": git_state(),
            "command": invocation(),
            "load_average_start": load_start,
            "load_average_end": load_end,
            "runs": runs,
        },
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
