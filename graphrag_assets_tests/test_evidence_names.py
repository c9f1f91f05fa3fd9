"""A name the question asks about, absent from the context, makes the evidence weak."""

from graphrag_assets.query.evidence import assess, named_terms

CAROL_CONTEXT = "With a dimpled, surprised-looking, capital face; a pleasant, easy, capital man."


def test_a_shared_common_word_does_not_hide_a_missing_name() -> None:
    evidence = assess("What is the capital of France?", CAROL_CONTEXT, "basic")
    assert evidence.found == ["capital"] and evidence.missing_names == ["france"]
    assert evidence.score == 0.5 > evidence.threshold and evidence.weak  # weak by the missing name alone
    assert "france does not occur" in evidence.warning()


def test_names_present_or_asked_globally_are_not_flagged() -> None:
    assert not assess("Who is Scrooge's nephew Fred?", "Fred, Scrooge's nephew, came by.", "local").weak
    assert not assess("What are the themes of France?", "", "global").weak  # global is never flagged
    assert named_terms("Who is the keeper of the Kestrel Point Lighthouse? Tell me.") == {
        "kestrel",
        "point",
        "lighthouse",
    }
    assert named_terms("Where is Paris") == {"paris"} and named_terms("Paris is where?") == set()
