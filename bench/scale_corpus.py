"""Generated corpora for the scale benchmark (``bench_scale.py``): any number of small documents.

Each document is 1–3 KB of English sentences about one town of a large, seeded world: its people,
places and organisations recur across the documents of that town (and, less often, of others), so
the noun-phrase graph has real communities, hubs and a long tail instead of a random cloud. Town
popularity follows a Zipf law (a few towns fill many documents, most fill a handful), and
sentences mix names with ordinary noun phrases ("the harbour wall", "a wet morning") drawn from a
vocabulary of a few thousand combinations, so the common-phrase side of the graph grows with the
corpus the way a real one does.

Everything is a pure function of the document's number (and the seed), so any document can be
regenerated, edited or compared on its own, and two runs of the benchmark index the same bytes.
Standard library only.
"""

from __future__ import annotations

import bisect
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FIRST = (
    "Agnes Albin Alwen Anselm Arlo Astrid Beatrix Bertil Bram Briony Cato Cecily Clement Corin Dagny Delphine Dorian "
    "Edda Edwin Elspeth Emrys Esme Fabian Felix Flora Freya Gideon Greta Gwilym Hanne Harriet Hector Hesper Idris Ines "
    "Ingrid Isolde Ivo Jasper Jory Judith Kasimir Kit Lars Leona Leopold Linnea Lorcan Mabel Mara Matthias Maud Milo "
    "Mirela Nell Niamh Nils Odile Orla Osric Otto Pascoe Perpetua Petra Piran Quentin Rhoswen Rosalind Rowan Sabine "
    "Silas Solveig Tamsin Thea Tobias Ulric Ursula Verity Viggo Wenna Wilhelmina Xavier Yara Ysolde Zeno"
).split()
LAST = (
    "Abbot Ashby Blythe Braddock Carrow Crane Dunmore Ellery Fenn Frome Garrick Gray Hale Harrow Hollis Ingram Jessop "
    "Kell Kestle Lanyon Lorne Lusk Mabey Marrow Morrow Nance Oakes Orchard Pell Pennick Polglase Quell Quiller Rendle "
    "Rook Rusk Sennen Stroud Thane Treloar Tull Vane Venn Wick Wyatt Yelland Zennor Bramwell Calloway Dering Everard "
    "Fairweather Goodall Haverford Ibbotson Jellicoe Kingsley Lockwood Merriman Northcott Penhallow Radley Sallow"
).split()
PLACE_STEMS = (
    "Gull Brindle Corran Tarrow Wex Ash Elsin Hollin Marl Pen Kestrel Rook Thorn Wil Bram Cald Dun Fal Grey Hal Ives "
    "Lang Mill Nor Oak Pol Red Sand Trev Wood"
).split()
PLACE_ENDS = ("haven", "mouth", "combe", "ford", "wick", "stow", "bury", "holm", "by", "ton", "field", "moor")
PLACE_KINDS = ("Harbour", "Market Hall", "Lighthouse", "Bridge", "Quay", "Mill", "Chapel", "Green", "Point", "Street")
ORG_KINDS = (
    "Fishing Cooperative",
    "Harbour Council",
    "Savings Bank",
    "Rescue Service",
    "Shipping Company",
    "Parish Council",
    "Growers Association",
    "Lifeboat Society",
    "Ropemakers Guild",
    "Reading Room",
    "Water Board",
    "Chronicle",
)
EVENTS = (
    "the Winter Storm",
    "the Lantern Festival",
    "the Spring Fair",
    "the Harbour Meeting",
    "the Great Flood",
    "the Midsummer Regatta",
    "the Harvest Supper",
    "the Bridge Inquiry",
    "the Long Strike",
    "the Census",
)
ADJECTIVES = (
    "old new wet cold dark bright narrow wide quiet busy broken empty heavy long short small large grey green white "
    "black red salt stone wooden iron early late northern southern eastern western upper lower outer inner public "
    "private rough calm steep muddy dry warm bitter patient careful weekly monthly annual local distant hidden"
).split()
NOUNS = (
    "harbour wall boat net lamp tide table ledger account letter meeting council road bridge market stall chapel "
    "bell tower field hedge barn cart horse mill wheel rope anchor mast sail cargo crate barrel inn kitchen hearth "
    "window door roof cellar school lesson teacher doctor fever winter summer morning evening storm flood wind rain "
    "fog shore cliff path garden orchard apple bread flour salt coal timber debt loan wage price rent lease deed "
    "map chart compass clock newspaper notice petition vote election budget repair ferry pier jetty warehouse"
).split()
VERBS = (
    "mended",
    "counted",
    "carried",
    "painted",
    "checked",
    "sold",
    "bought",
    "repaired",
    "opened",
    "closed",
    "moved",
    "measured",
    "watched",
    "cleaned",
    "loaded",
    "signed",
    "read",
    "copied",
    "guarded",
    "inspected",
)
NAME_SENTENCES = (
    "{p1} met {p2} at {place} to talk about {event}.",
    "{p1} works for the {org} and walks past {place} every {time}.",
    "During {event}, {p1} helped {p2} haul the boats above {place}.",
    "The {org} hired {p1} after {event}.",
    "{p1} and {p2} argued about the accounts of the {org}.",
    "{p1} wrote to {p2} about {np} near {place}.",
    "{p1} remembers {event} better than anyone in {town}.",
    "At {place}, {p1} showed {p2} {np} that the {org} had kept since {event}.",
    "{p1} lent money to {p2}, and the {org} still keeps the note.",
    "Since {event}, {p1} has avoided {place}.",
    "{p1} of {town} {verb} {np} for the {org}.",
    "{p2} says that {p1} {verb} {np} before {event}.",
)
PLAIN_SENTENCES = (
    "The wind came from the west all week.",
    "Nobody could say how long the {noun} would take to {verb2}.",
    "Somebody {verb} {np} twice before the season began.",
    "It rained for three days and {np} turned to mud.",
    "Prices fell again after {np} was {verb}.",
    "{np_cap} groaned whenever the swell rose.",
    "In the {time}, {np} was {verb} and left by {np2}.",
)
TIMES = ("morning", "evening", "Sunday", "market day", "winter", "spring tide")
VERBS_BARE = ("finish", "dry", "settle", "arrive", "mend", "clear")


def _zipf_cdf(count: int, exponent: float = 1.05) -> list[float]:
    weights = [1.0 / (rank**exponent) for rank in range(1, count + 1)]
    total = sum(weights)
    cdf, running = [], 0.0
    for weight in weights:
        running += weight / total
        cdf.append(running)
    return cdf


@dataclass(frozen=True)
class Town:
    name: str
    people: tuple[str, ...]
    places: tuple[str, ...]
    orgs: tuple[str, ...]


class World:
    """The towns documents are written about; the number of towns grows with the corpus."""

    def __init__(self, documents: int, seed: int = 18) -> None:
        self.seed = seed
        self.towns = [self._town(i) for i in range(max(20, documents // 25))]
        self._cdf = _zipf_cdf(len(self.towns))

    def _town(self, index: int) -> Town:
        rng = random.Random(f"{self.seed}-town-{index}")
        stem, end = PLACE_STEMS[index % len(PLACE_STEMS)], PLACE_ENDS[(index // len(PLACE_STEMS)) % len(PLACE_ENDS)]
        suffix = "" if index < len(PLACE_STEMS) * len(PLACE_ENDS) else f" {LAST[index % len(LAST)]}"
        name = f"{stem}{end}{suffix}"
        people = tuple(f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(rng.randint(5, 9)))
        places = tuple(f"{name} {kind}" for kind in rng.sample(PLACE_KINDS, 3))
        orgs = tuple(f"{name} {kind}" for kind in rng.sample(ORG_KINDS, 2))
        return Town(name, people, places, orgs)

    def town_of(self, rng: random.Random) -> Town:
        return self.towns[min(bisect.bisect_left(self._cdf, rng.random()), len(self.towns) - 1)]

    def document(self, number: int, variant: int = 0) -> str:
        """Document ``number``: 1–3 KB about one town; ``variant`` > 0 gives an edited version."""
        rng = random.Random(f"{self.seed}-doc-{number}-{variant}")
        home = self.town_of(random.Random(f"{self.seed}-home-{number}"))
        target = rng.randint(1000, 3000)
        title = f"{home.name} notes, entry {number}"
        lines, size = [title, ""], len(title) + 1
        while size < target:
            sentence = self._sentence(rng, home)
            lines.append(sentence)
            size += len(sentence) + 1
        return "\n".join(lines) + "\n"

    def _sentence(self, rng: random.Random, home: Town) -> str:
        def pick(kind: str) -> str:
            town = home if rng.random() < 0.85 else self.town_of(rng)
            return rng.choice(getattr(town, kind))

        np = f"the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
        values = {
            "p1": pick("people"),
            "p2": pick("people"),
            "place": pick("places"),
            "org": pick("orgs"),
            "town": home.name,
            "event": rng.choice(EVENTS),
            "time": rng.choice(TIMES),
            "verb": rng.choice(VERBS),
            "np": np,
            "np2": f"the {rng.choice(NOUNS)} {rng.choice(NOUNS)}",
            "np_cap": np[0].upper() + np[1:],
            "noun": rng.choice(NOUNS),
            "verb2": rng.choice(VERBS_BARE),
        }
        template = rng.choice(NAME_SENTENCES) if rng.random() < 0.7 else rng.choice(PLAIN_SENTENCES)
        text = template.format(**values)
        return text[0].upper() + text[1:]


def document_name(number: int) -> str:
    """File name of document ``number``, spread over folders of 1,000 (as large corpora usually are)."""
    return f"part_{number // 1000:03d}/note_{number:06d}.txt"


def write_text_corpus(input_dir: Path, documents: int, seed: int = 18) -> int:
    """Write ``documents`` text files; returns the total bytes written."""
    world = World(documents, seed)
    total = 0
    for number in range(documents):
        path = input_dir / document_name(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = world.document(number).encode("utf-8")
        path.write_bytes(data)
        total += len(data)
    return total


def jsonl_rows(documents: int, seed: int = 18) -> Iterator[dict[str, str]]:
    world = World(documents, seed)
    for number in range(documents):
        yield {"id": f"note-{number:06d}", "title": f"note {number}", "text": world.document(number)}


def write_jsonl_corpus(input_dir: Path, documents: int, seed: int = 18) -> int:
    """Write one JSONL file with one document per row; returns its size in bytes."""
    input_dir.mkdir(parents=True, exist_ok=True)
    path = input_dir / "notes.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for row in jsonl_rows(documents, seed):
            handle.write(json.dumps(row) + "\n")
    return path.stat().st_size
