"""Report contexts on a tiny hand-made graph: order, budget, local numbering, substitution."""

from __future__ import annotations

import polars as pl
import pytest

from graphrag_assets.core import ids
from graphrag_assets.core.schemas import (
    COMMUNITIES,
    COMMUNITY_REPORTS,
    COVARIATES,
    ENTITIES,
    RELATIONSHIPS,
    TEXT_UNITS,
    conform,
)
from graphrag_assets.core.tokens import count_tokens
from graphrag_assets.index.report_context import (
    ContextBudget,
    ReportTables,
    build_report_contexts,
    build_text_report_contexts,
    format_cell,
    render_report_for_parent,
    reports_by_community,
    strip_citations,
)

# title, type, description, degree (undirected neighbours in RELATIONSHIPS below)
ENTITY_ROWS = [
    ("A", "PERSON", "Alpha leads the group", 2),
    ("B", "PERSON", 'Beta said "hello"', 2),
    ("C", "PERSON", "Gamma, the treasurer", 3),
    ("D", "PLACE", "Port | harbour town", 2),
    ("E", "PLACE", "Eastern quay", 1),
    ("F", "EVENT", "Festival held once", 1),
    ("G", "PERSON", "Guard of the gate", 2),
    ("H", "PLACE", "Hill fort", 1),
]
RELATIONSHIP_ROWS = [
    ("A", "B", "A trusts B"),
    ("A", "C", "A pays C"),
    ("B", "C", "B and C argue"),
    ("C", "D", "C trades in D"),
    ("D", "E", "D borders E"),
    ("F", "G", "G opens F"),
    ("G", "H", "G lives on H"),
]
# community, level, parent, children, members. 0 splits into 1 and 2; F has no edge inside 0.
COMMUNITY_ROWS = [(0, 0, -1, [1, 2], "ABCDEF"), (1, 1, 0, [], "ABC"), (2, 1, 0, [], "DEF"), (3, 0, -1, [], "GH")]


def make_graph(extra_entities: list[tuple[str, str, str, int]] = ()) -> tuple[pl.DataFrame, ...]:
    """Entities numbered in title order (as the pipeline does), so an added title shifts them."""
    rows = sorted([*ENTITY_ROWS, *extra_entities])
    degree = {title: d for title, _, _, d in rows}
    entities = pl.DataFrame(
        [
            {
                "id": ids.entity_id(t),
                "human_readable_id": i,
                "title": t,
                "type": ty,
                "description": de,
                "text_unit_ids": [f"unit-{t.lower()}"],
                "frequency": 1,
                "degree": d,
            }
            for i, (t, ty, de, d) in enumerate(rows)
        ]
    )
    relationships = pl.DataFrame(
        [
            {
                "id": ids.relationship_id(s, t),
                "human_readable_id": 100 + i,
                "source": s,
                "target": t,
                "description": de,
                "weight": 1.0,
                "combined_degree": degree[s] + degree[t],
                "text_unit_ids": [],
            }
            for i, (s, t, de) in enumerate(RELATIONSHIP_ROWS)
        ]
    )
    communities = pl.DataFrame(
        [
            {
                "id": f"c{c}",
                "human_readable_id": c,
                "community": c,
                "level": level,
                "parent": parent,
                "children": children,
                "title": f"Community {c}",
                "entity_ids": [ids.entity_id(m) for m in members],
                "relationship_ids": [
                    ids.relationship_id(s, t) for s, t, _ in RELATIONSHIP_ROWS if s in members and t in members
                ],
                "text_unit_ids": [],
                "period": "2024-01-01",
                "size": len(members),
            }
            for c, level, parent, children, members in COMMUNITY_ROWS
        ]
    )
    covariates = pl.DataFrame(
        [
            {
                "id": "claim-1",
                "human_readable_id": 7,
                "covariate_type": "claim",
                "type": "DEAL",
                "description": "C made a deal with D",
                "subject_id": "C",
                "object_id": "D",
                "status": "TRUE",
                "start_date": None,
                "end_date": None,
                "source_text": None,
                "text_unit_id": "unit-c",
            }
        ]
    )
    return (
        conform(entities, ENTITIES),
        conform(relationships, RELATIONSHIPS),
        conform(communities, COMMUNITIES),
        conform(covariates, COVARIATES),
    )


def contexts(max_input_length: int = 8000, child_reports=None, extra_entities=(), level: int | None = 0):
    entities, relationships, communities, covariates = make_graph(list(extra_entities))
    return build_report_contexts(
        ReportTables(communities, entities, relationships, covariates),
        child_reports,
        level,
        ContextBudget(max_input_length),
    )


FULL_CONTEXT = """\
-----Entities-----
id|entity|type|description|degree
1|A|PERSON|Alpha leads the group|2
2|C|PERSON|Gamma, the treasurer|3
3|B|PERSON|Beta said "hello"|2
4|D|PLACE|"Port | harbour town"|2
5|E|PLACE|Eastern quay|1
6|F|EVENT|Festival held once|1

-----Claims-----
id|subject|object|type|status|description
1|C|D|DEAL|TRUE|C made a deal with D

-----Relationships-----
id|source|target|description|combined_degree
1|A|C|A pays C|5
2|B|C|B and C argue|5
3|C|D|C trades in D|5
4|A|B|A trusts B|4
5|D|E|D borders E|3"""

# Entities by hrid in title order: A0 B1 C2 D3 E4 F5 G6 H7; relationships 100.. in list order.
FULL_CITATIONS = {
    "Entities": (0, 2, 1, 3, 4, 5),
    "Claims": (7,),
    "Relationships": (101, 102, 103, 100, 104),
}

CHILD_REPORTS = {
    1: {
        "title": "The trio of A, B and C",
        "summary": "A, B and C run the group [Data: Entities (1, 2, 3)].",
        "findings": [{"summary": "A pays C", "explanation": "Money flows from A to C [Data: Relationships (1)]."}],
    },
    2: {"title": "The harbour", "summary": "D is a port next to E.", "findings": []},
}


def test_context_orders_by_degree_keeps_every_edge_and_edgeless_entities():
    # Edges by combined degree (ties by title); C brings three edges (MS would keep one per node);
    # F has no edge inside community 0 and still appears, after the edge-connected entities.
    context = contexts()[0]
    assert context.text == FULL_CONTEXT
    assert dict(context.citations) == FULL_CITATIONS
    assert (context.substituted, context.trimmed) == (0, False)
    assert context.tokens == count_tokens(FULL_CONTEXT)


def test_level_filter_and_community_without_claims():
    built = contexts(level=0)
    assert sorted(built) == [0, 3]
    assert built[3].text == (
        "-----Entities-----\nid|entity|type|description|degree\n1|G|PERSON|Guard of the gate|2\n2|H|PLACE|Hill fort|1\n\n"
        "-----Relationships-----\nid|source|target|description|combined_degree\n1|G|H|G lives on H|3"
    )


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("plain, with comma", "plain, with comma"),
        ('said "hi"', 'said "hi"'),
        ("a | b", '"a | b"'),
        ("two\nlines", '"two\nlines"'),
        ('"quoted" start', '"""quoted"" start"'),
        (None, ""),
        (3, "3"),
    ],
)
def test_format_cell(value, cell):
    assert format_cell(value) == cell


TRIMMED_CONTEXT = """\
-----Entities-----
id|entity|type|description|degree
1|A|PERSON|Alpha leads the group|2
2|C|PERSON|Gamma, the treasurer|3
3|B|PERSON|Beta said "hello"|2

-----Relationships-----
id|source|target|description|combined_degree
1|A|C|A pays C|5
2|B|C|B and C argue|5
3|A|B|A trusts B|4"""

WITHOUT_CLAIMS = FULL_CONTEXT.replace(
    "-----Claims-----\nid|subject|object|type|status|description\n1|C|D|DEAL|TRUE|C made a deal with D\n\n", ""
)


def test_budget_trimming_keeps_whole_rows_and_skips_what_does_not_fit():
    # After A-C and B-C, the C-D edge would also bring D: too big, skipped. A-B needs one row and
    # fits. Nothing after it does (D alone, E, F, C's claim), so every row is whole.
    budget = count_tokens(TRIMMED_CONTEXT)
    context = contexts(budget)[0]
    assert context.text == TRIMMED_CONTEXT
    assert context.tokens == budget
    assert context.trimmed
    assert dict(context.citations) == {"Entities": (0, 2, 1), "Relationships": (101, 102, 100)}


def test_claims_are_the_first_to_go():
    budget = count_tokens(WITHOUT_CLAIMS)
    assert budget < count_tokens(FULL_CONTEXT)
    context = contexts(budget)[0]
    assert context.text == WITHOUT_CLAIMS
    assert "Claims" not in context.citations


def test_unrelated_entity_leaves_prompt_byte_identical_but_remaps_citations():
    # "10 DOWNING STREET" sorts first, so every corpus-wide human_readable_id shifts by one.
    before = contexts()[0]
    after = contexts(extra_entities=[("10 DOWNING STREET", "PLACE", "An address elsewhere", 0)])[0]
    assert after.text == before.text
    assert after.citations["Entities"] == tuple(i + 1 for i in before.citations["Entities"])
    assert after.citations["Relationships"] == before.citations["Relationships"]


SUBSTITUTED_CONTEXT = """\
-----Reports-----
Report 1: The trio of A, B and C
A, B and C run the group.
Findings:
- A pays C: Money flows from A to C.

-----Entities-----
id|entity|type|description|degree
1|D|PLACE|"Port | harbour town"|2
2|E|PLACE|Eastern quay|1
3|F|EVENT|Festival held once|1

-----Relationships-----
id|source|target|description|combined_degree
1|C|D|C trades in D|5
2|D|E|D borders E|3"""


def test_substitution_replaces_largest_child_first_and_fits():
    # Community 0's raw context does not fit; child 1 (A, B, C, the claim and three edges) is the
    # largest, so its report replaces exactly that material. The C-D edge joins two children and
    # stays; D, E, F belong to child 2, which is not needed.
    budget = count_tokens(SUBSTITUTED_CONTEXT) + 5
    assert budget < count_tokens(FULL_CONTEXT)
    context = contexts(budget, CHILD_REPORTS)[0]
    assert context.text == SUBSTITUTED_CONTEXT
    assert (context.substituted, context.trimmed) == (1, False)
    assert context.tokens <= budget
    assert dict(context.citations) == {"Reports": (1,), "Entities": (3, 4, 5), "Relationships": (103, 104)}


def test_substitution_uses_every_report_then_trims():
    both = contexts(70, CHILD_REPORTS)[0]
    assert both.substituted == 2
    assert both.text.startswith("-----Reports-----\nReport 1: The trio of A, B and C\n")
    assert "\n\nReport 2: The harbour\nD is a port next to E." in both.text
    assert both.tokens <= 70
    # Room for the first report only (it takes 40 tokens); nothing else fits after it.
    tiny = contexts(42, CHILD_REPORTS)[0]
    assert (tiny.substituted, tiny.trimmed) == (1, True)
    assert tiny.text == SUBSTITUTED_CONTEXT.split("\n\n")[0]
    assert tiny.tokens <= 42


def test_child_without_report_keeps_its_raw_rows():
    only_second = {2: CHILD_REPORTS[2]}
    context = contexts(150, only_second)[0]
    assert context.substituted == 1
    assert context.citations["Reports"] == (2,)
    assert "1|A|PERSON|Alpha leads the group|2" in context.text
    assert "Festival" not in context.text  # F is covered by child 2's report
    assert context.tokens <= 150


def test_fitting_context_ignores_available_reports():
    assert contexts(8000, CHILD_REPORTS)[0].text == FULL_CONTEXT


def test_child_report_rendering_is_independent_of_global_numbering():
    local = {
        "title": "T",
        "summary": "S [Data: Entities (1, 2)].",
        "findings": [{"summary": "F", "explanation": "X [Data: Relationships (3, +more)]"}],
    }
    stored = {
        "title": "T",
        "summary": "S [Data: Entities (412, 1093)].",
        "findings": [{"summary": "F", "explanation": "X [Data: Relationships (77, +more)]"}],
    }
    assert render_report_for_parent(local) == render_report_for_parent(stored) == "S.\nFindings:\n- F: X"
    assert strip_citations("a [data: Claims (1)] b") == "a b"


def test_reports_by_community_reads_a_reports_frame():
    frame = conform(
        pl.DataFrame(
            [{"community": 1, "title": "T", "summary": "S", "findings": [{"summary": "f", "explanation": "e"}]}]
        ),
        COMMUNITY_REPORTS,
    )
    assert reports_by_community(frame) == {
        1: {"title": "T", "summary": "S", "findings": [{"summary": "f", "explanation": "e"}]}
    }


# --- text variant -------------------------------------------------------------------------------


UNIT_TEXTS = {
    "unit-a": "Text about A.",
    "unit-b": "Text about B.",
    "unit-c": "Text about C.",
    "unit-d": "Port text | D.",
    "unit-e": "E text.",
    "unit-f": "F text.",
    "unit-shared": "A and D meet.",
}


def text_units(padding: str = "") -> pl.DataFrame:
    """The units; ``padding`` lengthens every text so that child reports are smaller than them."""
    return conform(
        pl.DataFrame({"id": list(UNIT_TEXTS), "text": [text + padding for text in UNIT_TEXTS.values()]}),
        TEXT_UNITS,
    )


def text_graph() -> tuple[pl.DataFrame, pl.DataFrame]:
    entities, _, communities, _ = make_graph()
    shared = {"A": ["unit-a", "unit-shared"], "D": ["unit-d", "unit-shared"]}
    entities = entities.with_columns(
        pl.struct("title", "text_unit_ids")
        .map_elements(lambda r: shared.get(r["title"], r["text_unit_ids"]), return_dtype=pl.List(pl.String))
        .alias("text_unit_ids")
    )
    return entities, communities


def test_text_context_scores_units_by_member_degrees():
    entities, communities = text_graph()
    context = build_text_report_contexts(ReportTables(communities, entities, text_units=text_units()), level=0)[0]
    # unit-shared: A(2) + D(2) = 4; unit-c: 3; unit-a, unit-b, unit-d: 2 (ties by id); unit-e, unit-f: 1.
    assert context.text == (
        "-----Sources-----\nid|text\n1|A and D meet.\n2|Text about C.\n3|Text about A.\n4|Text about B.\n"
        '5|"Port text | D."\n6|E text.\n7|F text.'
    )
    assert context.citations["Sources"] == tuple(
        ids.short_id(u) for u in ["unit-shared", "unit-c", "unit-a", "unit-b", "unit-d", "unit-e", "unit-f"]
    )


def test_text_context_substitutes_child_reports():
    entities, communities = text_graph()
    units = text_units(" More of the same story." * 20)
    tables = ReportTables(communities, entities, text_units=units)
    full = build_text_report_contexts(tables, level=0)[0]
    context = build_text_report_contexts(tables, CHILD_REPORTS, 0, ContextBudget(full.tokens - 1))[0]
    # Child 1 (A, B, C: three units) is the largest and is replaced by its report; the shared unit
    # is mentioned by both children, so no single report covers it and it stays.
    assert (context.substituted, context.trimmed) == (1, False)
    assert context.text.startswith("-----Reports-----\nReport 1: The trio of A, B and C\n")
    sources = [
        line.split("|", 1)[1].split(" More")[0]
        for line in context.text.split("-----Sources-----\nid|text\n")[1].split("\n")
    ]
    assert sources == ["A and D meet.", '"Port text | D.', "E text.", "F text."]
    assert context.citations["Sources"] == tuple(ids.short_id(u) for u in ["unit-shared", "unit-d", "unit-e", "unit-f"])
    assert context.tokens <= full.tokens - 1
