"""Offline answers look for what the question asks, next to what it is about, and skip dialogue tags."""

from __future__ import annotations

from graphrag_assets.llm.local_embedder import LocalEmbedder
from graphrag_assets.query.answer_focus import (
    DEFINITION,
    PERSON,
    QUANTITY,
    TIME,
    another_bearer,
    commits,
    is_dialogue_tag,
    offers,
    question_focus,
    speaker,
)
from graphrag_assets.query.extractive import extractive_answer, keywords, stem


def first_sentence(question: str, text: str) -> str:
    answer = extractive_answer(question, [("Sources (aa)", text)], LocalEmbedder(), max_sentences=1)
    return answer.split("\n\n")[1].removesuffix(" [Data: Sources (aa)]")


def test_question_kinds_and_subjects() -> None:
    assert question_focus("Who is Mr. Topper?").wants == DEFINITION
    assert question_focus("Who is Mr. Topper?").subjects == ("MR TOPPER",)
    assert question_focus("Who was Scrooge's business partner?").wants == PERSON
    assert question_focus("Who is the mayor of Vellmouth?").wants == PERSON
    assert question_focus("When was the Kestrel Point Lighthouse built?").wants == TIME
    assert question_focus("When was the Kestrel Point Lighthouse built?").subjects == ("KESTREL POINT LIGHTHOUSE",)
    assert question_focus("How many boats does the cooperative own?").wants == QUANTITY


def test_dialogue_tags_are_recognised() -> None:
    assert is_dialogue_tag("'Who is Fred?' said Scrooge.")
    assert is_dialogue_tag('"You are quite a woman, little Fan!" exclaimed the boy.')
    assert not is_dialogue_tag("Scrooge said nothing to the man in the street that night.")
    assert not is_dialogue_tag("Fan, the sister of Scrooge, came home for Christmas.")


def test_a_definition_beats_the_lines_that_repeat_the_name() -> None:
    text = (
        "'What do you say, Topper?' said the niece. 'Topper!' cried Fred. "
        "Topper, a bachelor, had his eye on the plump sister. Topper was there again, and Topper laughed."
    )
    assert first_sentence("Who is Topper?", text) == "Topper, a bachelor, had his eye on the plump sister."
    focus = question_focus("Who is Topper?")
    assert offers(focus, "Mr. Topper, a bachelor.", frozenset({"topper"})) == 1.0
    assert offers(focus, "Especially Topper, who could growl away in the bass.", frozenset({"topper"})) == 0.0


def test_the_asked_kind_next_to_the_subject_wins() -> None:
    text = (
        "The Kestrel Point Lighthouse guards the bay. Keepers of the Kestrel Point Lighthouse log every ship. "
        "The Kestrel Point Lighthouse was built in 1887 on the headland."
    )
    assert first_sentence("When was the Kestrel Point Lighthouse built?", text).endswith(
        "built in 1887 on the headland."
    )
    boats = (
        "At 23:30 a member of the Vellmouth Fishing Cooperative called the lighthouse. "
        "The Vellmouth Fishing Cooperative owns the fish market. It negotiates prices for its forty-one member boats."
    )
    assert first_sentence("How many member boats does the Vellmouth Fishing Cooperative have?", boats) == (
        "It negotiates prices for its forty-one member boats."
    )


def test_a_name_with_of_is_defined_and_a_clause_is_not() -> None:
    assert question_focus("Who is the Ghost of Christmas Present?").wants == DEFINITION
    assert question_focus("What was Scrooge eating when Marley's ghost came?").wants != DEFINITION
    assert question_focus("Who is Tiny Tim?").named
    assert not question_focus("Who was the mediator in the reef case?").named


def test_an_alias_or_a_list_entry_opens_a_definition() -> None:
    tiny_tim = question_focus("Who is Tiny Tim?")
    words = frozenset({"tiny", "tim"})
    assert offers(tiny_tim, 'Tim Cratchit ("Tiny Tim"), a cripple, youngest son of Bob Cratchit.', words) == 1.0
    martha = question_focus("Who is Martha Cratchit?")
    cast = "Belinda and Martha Cratchit, daughters of the preceding."
    assert offers(martha, cast, frozenset({"martha", "cratchit"})) == 1.0


def test_another_bearer_of_the_surname_is_someone_else() -> None:
    assert another_bearer("Mrs. Cratchit, wife of Bob Cratchit.", "MARTHA CRATCHIT")
    assert not another_bearer("Cratchit laughed.", "MARTHA CRATCHIT")
    assert not another_bearer("Martha Cratchit laughed.", "MARTHA CRATCHIT")
    text = (
        "Mrs. Cratchit, wife of Bob Cratchit. Bob Cratchit, clerk to Ebenezer Scrooge. "
        "Belinda and Martha Cratchit, daughters of the preceding."
    )
    assert first_sentence("Who is Martha Cratchit?", text) == "Belinda and Martha Cratchit, daughters of the preceding."


def test_how_old_counts_years_and_the_name_alone_is_no_answer() -> None:
    focus = question_focus("How old was Old Joe?")
    words = frozenset({"old", "joe"})
    assert offers(focus, "Old Joe counted out their several gains.", words) == 0.0
    assert offers(focus, "Old Joe was nearly seventy years of age.", words) == 1.0
    text = (
        "Look here, old Joe, here's a chance! "
        "By the stove sat old Joe, a grey-haired rascal, nearly seventy years of age."
    )
    assert first_sentence("How old was Old Joe?", text).endswith("nearly seventy years of age.")


def test_irregular_past_forms_match_their_verb() -> None:
    assert "say" in keywords("'Humbug!' said Scrooge.") & keywords("What did Scrooge say?")
    assert stem("bought") == stem("buy") == "buy"


def test_a_month_is_capitalised_and_a_named_spirit_is_no_time() -> None:
    focus = question_focus("When will the first spirit come?")
    assert offers(focus, "Expect the first to-morrow, when the bell tolls One.", frozenset()) == 1.0
    assert offers(focus, "The lighthouse was repainted in May.", frozenset()) == 1.0
    # "may" the verb and the "Christmas" of a spirit's name say nothing about when
    assert offers(focus, "An apparition showing the shadows of things which yet may happen.", frozenset()) == 0.0
    assert offers(focus, "Scrooge followed the Ghost of Christmas Present.", frozenset()) == 0.0
    assert offers(focus, "Scrooge woke on the night of Christmas Eve.", frozenset()) == 1.0


def test_a_quantity_said_in_speech_counts() -> None:
    focus = question_focus("How many spirits will haunt Scrooge?")
    spoken = "'You will be haunted,' resumed the Ghost, 'by Three Spirits.'"
    assert offers(focus, spoken, frozenset({"scrooge"})) == 1.0
    assert (
        first_sentence("How many spirits will haunt Scrooge?", f"The Spirit stood beside Scrooge. {spoken}") == spoken
    )


def test_a_possessive_ends_a_name() -> None:
    focus = question_focus("What did Mara buy for the Hollands' Christmas dinner?")
    assert focus.subjects == ("MARA", "HOLLANDS", "CHRISTMAS")
    assert question_focus("Who is the Ghost of Christmas Present?").subjects == ("GHOST OF CHRISTMAS PRESENT",)


def test_a_pronoun_carries_the_subject_and_the_asked_words_to_the_next_sentence() -> None:
    text = (
        "Mara walked into the hall at dusk. The lantern she carried hung from a long pole. "
        "It was made of brass and green glass. Mara's lantern was famous in the village."
    )
    assert first_sentence("What was Mara's lantern made of?", text) == "It was made of brass and green glass."


def test_the_speaker_of_a_dialogue_paragraph() -> None:
    assert speaker(["'No, no,' said Ada.", "'I am in earnest.", "Come back soon, and I'll pay you.'"]) == " ADA "
    assert speaker(["'Why, it's you!' Ada exclaimed in delight."]) == " ADA "
    assert speaker(["'A fine day, aunt!' said Ada's nephew."]) == ""  # someone else
    assert speaker(["'Yes,' said Ada.", "'No,' said Tom."]) == ""  # two speakers
    assert speaker(["Ada went out, and said Tom was late."]) == ""  # narration, not dialogue


def test_what_someone_promised_is_an_undertaking_in_their_own_lines() -> None:
    assert question_focus("What did Ada promise Tom?").commits
    assert question_focus("What did Ada say of the fair?").speech
    assert not question_focus("What did Ada buy?").speech
    assert commits("I'll double your wages from Monday, Tom!'", own_line=True)
    assert not commits("I'll double your wages from Monday, Tom!'", own_line=False)  # someone else's line
    assert commits("She promised to come back.", own_line=False)
    assert not commits("Illness kept Tom at home.", own_line=True)
    text = (
        "'Good morning, Tom,' said Ada. 'I am glad to see you here.'\n\n"
        "'Thank you,' said Tom, and he bowed to Ada.\n\n"
        "'Listen, Tom,' said Ada. 'You have worked hard all year. I'll double your wages from Monday, Tom!'\n\n"
        "Tom smiled at Ada and went back to work."
    )
    assert first_sentence("What did Ada promise Tom?", text) == "I'll double your wages from Monday, Tom!'"


def test_how_much_is_answered_by_a_sum_of_money() -> None:
    focus = question_focus("How much did Ada offer the boy to run the errand?")
    spoken = "Come back in five minutes, and I'll give you half-a-crown!"
    assert offers(focus, spoken, frozenset({"ada"})) == 1.0
    assert offers(focus, "Come back with the man, and I'll give you a shilling.", frozenset({"ada"})) == 1.0
    assert offers(focus, "The boy ran off at once.", frozenset({"ada"})) == 0.0


def test_the_asked_verb_done_by_the_subject_wins() -> None:
    assert question_focus("What did Ada buy at the fair?").verb == "buy"
    assert question_focus("How many spirits will haunt Scrooge?").verb == ""  # no name before the verb
    assert question_focus("What did the Hollands have for dinner?").verb == ""  # a function word
    text = "Tom bought it for Ada. Ada went home with Tom. Ada bought a red kite at the fair."
    assert first_sentence("What did Ada buy?", text) == "Ada bought a red kite at the fair."
    text = (
        "Tom bought Ada a hat. Ada went home with Tom. Ada bought a red kite at the fair."  # Ada is no buyer of the hat
    )
    assert first_sentence("What did Ada buy?", text) == "Ada bought a red kite at the fair."
