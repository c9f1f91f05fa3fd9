"""What a question asks for, and whether a sentence offers it: the cues of the offline answers.

A factoid question names a subject ("Søren Holm", "the Lantern Festival") and asks for one kind of
thing about it: a person ("who ..."), a time ("when ..."), a quantity ("how many ..."), a place
("where ...") or a definition ("who is X?", "what is X?"). A sentence answers it when it mentions
the subject *and* holds a thing of that kind that the question does not already contain; a
sentence that only repeats the question's words ("'Who is Fred?' said Scrooge") does not.

A question whose verb is a speech act ("what did X say / promise?") is answered by X's own lines:
:func:`speaker` tells who speaks a paragraph of dialogue, :func:`commits` whether a line undertakes
something. Everything here is a regular expression or a word list over one sentence (or one
paragraph's sentences): no model, deterministic, microseconds per sentence, English only (other
languages simply get no type bonus).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphrag_assets.core.sentences import mention_key
from graphrag_assets.core.words import function_words

PART_SHARE = 0.6  # a sentence naming "Bob" for "Bob Cratchit"
PERSON, TIME, QUANTITY, PLACE, DEFINITION, OTHER = "person", "time", "quantity", "place", "definition", "other"

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TIME = re.compile(
    rf"\b(?:1[0-9]{{3}}|20[0-9]{{2}})\b|\b\d{{1,2}}[:.]\d{{2}}\b|(?-i:\b(?:{_MONTHS.title()}|{_DAYS.title()})\b)"
    r"|\bo'clock\b|\b(?:midnight|noon|dawn|dusk|morning|evening|night|yesterday|to-?morrow|to-?night|"
    r"christmas(?:[- ](?:eve|day))?|spring|summer|autumn|winter|century|centuries|ago|since|until|"
    r"bells? (?:tolls?|struck|rang)|(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) o)\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds|"
    "thousand|thousands|million|millions|billion|dozen|dozens|score|half|quarter|double|twice|once|"
    "several|many|few|much"
)
_QUANTITY = re.compile(rf"\d|\b(?:{_NUMBER_WORDS})(?:-(?:{_NUMBER_WORDS}))?\b|\bper cent\b|%|€|\$|£", re.IGNORECASE)
_CURRENCY = "shilling|penny|pence|crown|pound|guinea|sovereign|farthing|dollar|cent|euro|franc|yen|rupee"
# a sum of money with no digit in it: "a shilling", "half-a-crown", "three million euros"
_MONEY = re.compile(
    rf"\b(?:a|an|one|half|half-a|(?:{_NUMBER_WORDS})(?:-(?:{_NUMBER_WORDS}))*)[- ](?:(?:{_NUMBER_WORDS})\s+)*(?:{_CURRENCY})s?\b",
    re.IGNORECASE,
)
_PLACE = re.compile(r"\b(?:in|at|on|near|from|to|into|inside|outside|beside|behind|across)\s+(?:the\s+)?[A-Z]\w+")
_SPEECH_VERBS = (
    "said|says|cried|exclaimed|replied|returned|asked|observed|rejoined|repeated|answered|added|"
    "continued|whispered|shouted|muttered|demanded|inquired|enquired|urged|pursued|thought"
)
_SPEECH = re.compile(rf"\b(?:{_SPEECH_VERBS})\b", re.IGNORECASE)
_QUOTED = re.compile(r"[\"\u201c][^\"\u201d]*[\"\u201d]|(?:^|(?<=[\s(]))'.*?'(?=[\s,.;:!?)-]|$)")
_CAPITALISED = re.compile(r"(?<![\w'])[A-Z][\w'-]*")
_QUESTION_WORD = re.compile(
    r"^\s*(?P<w>who|whom|whose|when|where|how\s+(?:many|much|long|old|far|deep|big|often|tall|wide|high)|"
    r"what\s+(?:year|time|date|day|month|age)|which\s+(?:year|day|date|month)|what|which)\b",
    re.IGNORECASE,
)
_DEFINITION_QUESTION = re.compile(
    r"^\s*(?:who|what)\s+(?:is|was|are|were)\s+(?P<subject>(?:(?:a|an|the|mr|mrs|ms|dr|old|young|little)\.?\s+)*"
    r"[^?,]{1,60}?)\s*\??\s*$",
    re.IGNORECASE,
)
_DEFINITION_VERBS = re.compile(
    r"\b(?:of|does|do|did|made|called|named|name|happened|happen"
    r"|when|while|where|whenever|after|before|because|since|if|that|which|who|whom)\b",
    re.IGNORECASE,
)  # "what was X made of?", "what was X eating when Y came?": not "what is X?"
_NAME_OF = re.compile(r"\b([A-Z][\w'-]*\s+)of\s+(?:the\s+)?(?=[A-Z])")  # "Ghost of Christmas Present" is one name
_UNITS = {  # what "how old/long/far ..." counts, though the question does not say it
    "how old": frozenset({"year", "age", "month", "birthday"}),
    "how long": frozenset({"year", "month", "week", "day", "hour", "minute", "second", "night", "time"}),
    "how far": frozenset({"mile", "yard", "kilometre", "kilometer", "metre", "meter", "league", "foot", "feet"}),
    "how deep": frozenset({"metre", "meter", "foot", "feet", "fathom", "yard", "mile"}),
    "how tall": frozenset({"metre", "meter", "foot", "feet", "inch", "storey", "story"}),
    "how high": frozenset({"metre", "meter", "foot", "feet", "inch", "storey", "story"}),
    "how wide": frozenset({"metre", "meter", "foot", "feet", "inch", "yard", "mile"}),
}


def _forms(verbs: str) -> frozenset[str]:
    """The verbs with their -s, -ed and -ing forms (irregular pasts are listed with them)."""
    out = set()
    for verb in verbs.split():
        stem = verb[:-1] if verb.endswith("e") else verb
        out |= {verb, f"{verb}s", f"{stem}ed", f"{stem}ing", f"{verb}es"}
    return frozenset(out)


# "what did X say/tell/promise ...?" is answered by X's own lines of speech
_UNDERTAKINGS = _forms("promise offer vow swear pledge threaten undertake") | {"swore", "sworn", "undertook"}
_SPEECH_ACTS = (
    _forms("say tell ask reply answer cry shout call exclaim whisper warn beg order suggest propose admit declare")
    | {"said", "told", "cried", "replied"}
    | _UNDERTAKINGS
)
# an undertaking as it is said ("I'll raise your salary", "we shall pay") or told ("he promised to ...")
_SAID_UNDERTAKING = re.compile(
    r"(?-i:\b(?:I|[Ww]e))(?:'ll|\s+will|\s+shall|\s+(?:am|are)\s+(?:going|about)\s+to|\s+promise|\s+swear)\b",
    re.IGNORECASE,
)
_TOLD_UNDERTAKING = re.compile(r"\b(?:promised|offered|vowed|swore|pledged|undertook|threatened)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Focus:
    """What the question asks for (``wants``) and what it is about (``subjects``: mention keys)."""

    wants: str
    subjects: tuple[str, ...]  # upper-case phrases, as :func:`mention_key` spells them
    question_words: frozenset[str]  # lower-case words of the question (an answer must add something)
    units: frozenset[str] = frozenset()  # what a quantity is counted in when the question implies it ("how old": years)
    named: bool = True  # the subjects are names from the question (not the phrase of "what is the lantern festival?")
    speech: bool = False  # its verb is a speech act ("what did X say/promise/tell ..."): X's own lines answer it
    commits: bool = False  # its verb is an undertaking ("what did X promise/offer ..."): "I'll ..." answers it
    verb: str = ""  # what the subject does in "what did X buy ...?" (lower case; "" when none or a function word)


def question_focus(question: str) -> Focus:
    """The :class:`Focus` of a question: its wh-word's kind and its capitalised names (the subjects)."""
    words = frozenset(w.lower() for w in re.findall(r"[\w'-]+", question))
    definition = _DEFINITION_QUESTION.match(question)
    defined = definition.group("subject") if definition else ""
    found = _QUESTION_WORD.match(question)
    word = " ".join(found.group("w").lower().split()) if found else ""
    if definition and not _DEFINITION_VERBS.search(_NAME_OF.sub(r"\1", defined)) and not _is_role(question, defined):
        wants = DEFINITION
    else:
        if word in ("who", "whom", "whose"):
            wants = PERSON
        elif word == "when" or word.startswith(("what ", "which ")):
            wants = TIME
        elif word.startswith("how "):
            wants = QUANTITY if word != "how often" else TIME
        elif word == "where":
            wants = PLACE
        else:
            wants = OTHER
    names = _subjects(question, None)
    subjects = names or _subjects(question, defined or None)
    return Focus(
        wants,
        subjects,
        words,
        _UNITS.get(word, frozenset()),
        named=bool(names),
        speech=bool(words & _SPEECH_ACTS),
        commits=bool(words & _UNDERTAKINGS),
        verb=_asked_verb(question),
    )


_AUXILIARY_QUESTION = re.compile(
    r"^\s*(?:what|whom|who|which|where|when|why|how(?:\s+(?:many|much))?)\s+(?:\w+\s+)??"
    r"(?:did|does|do|will|would|could|can|should|shall|might|may)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)


def _asked_verb(question: str) -> str:
    """The verb of a question asked with an auxiliary about a name: "buy" in "What did Scrooge buy
    for the Cratchits?", the first lower-case word after the name; "" when no name comes first ("how
    many spirits will haunt Scrooge?") or the word is a function word ("have")."""
    found = _AUXILIARY_QUESTION.match(question)
    if not found:
        return ""
    stop = function_words()
    named = False
    for word in re.findall(r"[\w'-]+", found.group("rest")):
        if word[:1].isupper():
            named = True
        elif word.lower() not in ("the", "a", "an"):
            return word.lower() if named and word.lower() not in stop else ""
    return ""


def _is_role(question: str, defined: str) -> bool:
    """ "Who is Scrooge's partner?" or "who is the mayor?" asks for a person, "who is Fred?" for a description."""
    if not question.lstrip().lower().startswith("who"):
        return False
    core = re.sub(r"^(?:(?:the|a|an|mr|mrs|ms|dr)\.?\s+)+", "", defined.strip(), flags=re.IGNORECASE)
    return "'s " in defined or not core[:1].isupper()


def _subjects(question: str, defined: str | None) -> tuple[str, ...]:
    """Runs of capitalised words (the first word only when it is not a question word), else the
    defined phrase of a "what is X?" question without its articles."""
    stop = function_words()
    runs: list[list[str]] = []
    previous_end = -2
    owner = False  # the previous word was a possessive: "the Cratchits' Christmas dinner" names two things
    for m in _CAPITALISED.finditer(question):
        word = m.group().removesuffix("'s").rstrip("'")
        if m.start() == 0 and _QUESTION_WORD.match(word) or word.lower() in stop and m.start() == 0:
            continue
        gap = question[previous_end : m.start()]
        joins = gap.strip() in ("", ".", "of", "of the") and not owner
        owner = m.group() != word
        if runs and joins and previous_end >= 0:
            runs[-1].extend([*gap.replace(".", " ").split(), word])  # "Ghost of Christmas Present" is one name
        else:
            runs.append([word])
        previous_end = m.end()
    names = [" ".join(run) for run in runs if not all(w.lower() in stop for w in run)]
    if not names and defined:
        content = [w for w in re.findall(r"[\w'-]+", defined) if w.lower() not in stop]
        names = [" ".join(content)] if content else []
    return tuple(dict.fromkeys(mention_key(n).strip() for n in names if mention_key(n).strip()))


def mentions(key: str, subject: str) -> float:
    """How surely a sentence (by its mention key) names the subject: 1 for the whole name or the
    last word of a two-word name (a surname: "Holm" for "Søren Holm"), ``PART_SHARE`` for another
    word of it ("Bob" for "Bob Cratchit"), else 0. Function words and words of two letters never
    count alone."""
    if f" {subject} " in key:
        return 1.0
    words = [w for w in subject.split(" ") if len(w) > 2 and w.lower() not in function_words()]
    if not words:
        return 0.0
    if subject.count(" ") == 1 and words[-1] == subject.rsplit(" ", 1)[-1] and f" {words[-1]} " in key:
        return 1.0  # a two-word name by its last word
    return PART_SHARE if any(f" {w} " in key for w in words[:-1]) else 0.0


_GIVEN_BEFORE = re.compile(r"([A-Z][\w'-]*)\.?\s+$")


def another_bearer(sentence: str, subject: str) -> bool:
    """Whether the sentence names a two-word subject's last word only after another capitalised
    word: "Bob Cratchit" or "Mrs. Cratchit" for "Martha Cratchit" is someone else of the family."""
    parts = subject.split(" ")
    if len(parts) != 2:
        return False
    found = False
    for m in re.finditer(rf"\b{re.escape(parts[1])}\b", sentence, re.IGNORECASE):
        before = _GIVEN_BEFORE.search(sentence, 0, m.start())
        if before is None or before.group(1).upper() == parts[0]:
            return False  # the name alone, or in full
        found = True
    return found


def narrative(sentence: str) -> str:
    """The sentence without its quoted speech."""
    return _QUOTED.sub(" ", sentence)


def is_dialogue_tag(sentence: str) -> bool:
    """A line of speech whose narration is only "... said X": it repeats words, it states nothing."""
    told = narrative(sentence)
    if told == sentence or not _SPEECH.search(told):
        return False
    return len(re.findall(r"[\w'-]+", told)) <= 6


_NAME_RUN = r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*"
_TAG = re.compile(
    rf"\b(?:{_SPEECH_VERBS})\s+(?:the\s+)?(?P<after>{_NAME_RUN})|(?P<before>{_NAME_RUN})\s+(?:[a-z]+ly\s+)?(?:{_SPEECH_VERBS})\b"
)


def speaker(paragraph: list[str]) -> str:
    """Who speaks a paragraph of dialogue (one that opens with a quote), as a mention key: the one
    name its tags give ("'No, no,' said Scrooge."), or "" when they give none, a pronoun or several.

    Every sentence of such a paragraph is that speaker's line, also those the tag does not touch
    ("Come back with him in less than five minutes, and I'll give you half-a-crown!'").
    """
    if not paragraph or paragraph[0][:1] not in "'\"":
        return ""
    names = set()
    for sentence in paragraph:
        for m in _TAG.finditer(narrative(sentence)):
            name = m.group("after") or m.group("before")
            names.add("" if name.endswith("'s") else mention_key(name))  # "said Scrooge's nephew" is someone else
    return names.pop() if len(names) == 1 else ""


def commits(sentence: str, own_line: bool) -> bool:
    """Whether the sentence tells of an undertaking ("he promised ..."), or, when it is a line of
    the one asked about (``own_line``), makes one ("I'll raise your salary", "we shall pay"): an
    "I'll ..." in someone else's line is not theirs."""
    told = _TOLD_UNDERTAKING.search(narrative(sentence)) is not None
    return told or (own_line and _SAID_UNDERTAKING.search(sentence) is not None)


def offers(focus: Focus, sentence: str, subject_words: frozenset[str]) -> float:
    """How surely (0 to 1) the sentence holds a thing of the kind the question wants, beyond the
    question's words. A time or a quantity counts in quoted speech too ("'by Three Spirits'" for
    "how many spirits ...?"); a name or a place only in the narration around it."""
    if focus.wants == TIME:
        return float(
            any(
                m.group().lower() not in focus.question_words and not _in_title(sentence, m)
                for m in _TIME.finditer(sentence)
            )
        )
    if focus.wants == QUANTITY:
        return float(_counts_something_asked(focus, sentence, subject_words))
    told = narrative(sentence)
    if focus.wants == PLACE:
        return float(any(m.group().split()[-1].lower() not in focus.question_words for m in _PLACE.finditer(told)))
    if focus.wants == PERSON:
        return float(any(_is_new_name(m, told, focus, subject_words) for m in _CAPITALISED.finditer(told)))
    if focus.wants == DEFINITION:
        return _defines(sentence, focus)
    return 0.0


_TITLE_OF = re.compile(r"\b[A-Z][\w'-]*\s+of\s+(?:the\s+)?$")


def _in_title(sentence: str, m: re.Match[str]) -> bool:
    """Whether a time word is part of a name ("the Ghost of Christmas Past" names a spirit, not a time)."""
    return m.group()[:1].isupper() and _TITLE_OF.search(sentence, 0, m.start()) is not None


def _counts_something_asked(focus: Focus, text: str, subject_words: frozenset[str]) -> bool:
    """A number (not a clock time or a date) within three words of a word the question counts
    ("forty-one member boats" for "how many member boats"); any number when the question names
    nothing to count; for "how much", also a sum of money ("I'll give you half-a-crown")."""
    if "much" in focus.question_words and _MONEY.search(text):
        return True
    clock = {m.span() for m in _TIME.finditer(text)}
    words = [(m.group().lower(), m.span()) for m in re.finditer(r"[\w'.,%€$£-]*\w[%]?|[%€$£]", text)]
    asked = {w[:4] for w in focus.question_words - function_words() - subject_words if len(w) > 2} - {
        "how",
        "many",
        "much",
    } | {u[:4] for u in focus.units}
    for i, (word, span) in enumerate(words):
        if not _QUANTITY.fullmatch(word) and not (_QUANTITY.match(word) and word[:1].isdigit()):
            continue
        if word in focus.question_words or any(a <= span[0] < b for a, b in clock):
            continue
        nearby = words[max(0, i - 3) : i + 4]
        if not asked or any(w[:4] in asked for w, _ in nearby):
            return True
    return False


def _is_new_name(m: re.Match[str], text: str, focus: Focus, subject_words: frozenset[str]) -> bool:
    word = m.group().removesuffix("'s").lower()
    if word in focus.question_words or word in subject_words or word in function_words():
        return False
    before = text[: m.start()].rstrip()
    return bool(before) and before[-1] not in ".!?:\"'("  # not the capital that starts a sentence


_DETERMINER = r"(?:a|an|the|one|his|her|their|its)\s+"
# "X, a bachelor" / "X, Scrooge's nephew" / "X, clerk to ..." / "X is a ..." / "X (the ...)"; the
# word after the comma must be a content word ("Topper, who could growl" describes nothing).
_APPOSITION = re.compile(
    rf"(?:'s)?(?:[\"\u201d')]*,\s*(?:{_DETERMINER}|[A-Z][\w-]*'s\s+)?(?P<word>[a-z][\w-]*)"
    rf"|\s+(?:is|was|are|were|became|has been|had been)\s+{_DETERMINER}|\s*\(\s*{_DETERMINER})"
)


def _names_another(sentence: str, start: int, subject: str) -> bool:
    before = _GIVEN_BEFORE.search(sentence, 0, start)
    return before is not None and before.group(1).upper() != subject.split(" ")[0]


# what may stand before a name that opens a sentence: a title, or a full name whose alias the name is
# ("Tim Cratchit (\"Tiny Tim\"), a cripple")
_OPENING = re.compile(
    r"(?:(?:Mr|Mrs|Ms|Dr|Old|Young|Little)\.?\s+)?\W*"
    r"|(?:[A-Z][\w'-]*\s+){1,3}\(\W*"  # an alias: Tim Cratchit ("Tiny Tim"), a cripple
    r"|(?:[A-Z][\w'-]*,?\s+)+and\s+"  # one of a list: Belinda and Martha Cratchit, daughters
)


def _defines(sentence: str, focus: Focus) -> float:
    """1 when the sentence opens by defining one of the question's subjects ("Mr. Topper, a
    bachelor."), 0.6 when it defines it further on, else 0."""
    best = 0.0
    for subject in focus.subjects:
        for form in (subject, subject.rsplit(" ", 1)[-1]):
            name = r"\W+".join(re.escape(w) for w in form.split())
            for m in re.finditer(rf"\b(?i:{name})", sentence):
                if form != subject and _names_another(sentence, m.start(), subject):
                    continue
                found = _APPOSITION.match(sentence, m.end())
                if not found or (found.group("word") or "x").lower() in function_words():
                    continue
                opening = _OPENING.fullmatch(sentence[: m.start()])
                best = max(best, 1.0 if opening else 0.6)
    return best
