"""What the CLI prints for a query: the answer, then what it cites by name."""

from graphrag_assets.cli.output import cited_records, render_query_result
from graphrag_assets.query.results import ContextRecord, ContextRecords, QueryResult, QueryUsage


def records() -> ContextRecords:
    return ContextRecords(
        reports=[ContextRecord("r1", 3, "3", "Kestrel Point and the storm")],
        entities=[ContextRecord("e1", 12, "12", "SØREN HOLM")],
        sources=[
            ContextRecord("t1", 0, "d9c6fa93", "archive/kestrel_accord_summary.md"),
            ContextRecord("t2", 4, "f350f12f", "interviews.jsonl: Interview with Lucien Marchetti"),
        ],
    )


def test_cited_records_follow_the_answer_and_skip_unknown_ids() -> None:
    answer = (
        "Holm relayed the mayday [Data: Sources (f350f12f, d9c6fa93); Entities (12)]. "
        "The report agrees [Data: Reports (3, 99); Sources (f350f12f)]."
    )
    assert cited_records(answer, records()) == [
        ("sources", "f350f12f", "interviews.jsonl: Interview with Lucien Marchetti"),
        ("sources", "d9c6fa93", "archive/kestrel_accord_summary.md"),
        ("entities", "12", "SØREN HOLM"),
        ("reports", "3", "Kestrel Point and the storm"),
    ]


def test_human_output_ends_with_the_cited_records_by_name() -> None:
    result = QueryResult("It held [Data: Sources (d9c6fa93)].", "basic", records(), "", QueryUsage(), llm_used=False)
    text = render_query_result(result)
    assert "cited:\n  Sources (d9c6fa93): archive/kestrel_accord_summary.md\n" in text
    assert "f350f12f" not in text  # in the context, but not cited
