"""Human-readable rendering of CLI results."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl

from graphrag_assets.core.sentences import shorten
from graphrag_assets.index.report_reuse import CHILD_REPORT_CHANGED, CONTEXT_CHANGED, MEMBERS_CHANGED
from graphrag_assets.query.citations import cited_records
from graphrag_assets.query.results import Citation

CELL_WIDTH = 60  # longer text is cut with "…": the table stays readable; --json and --csv hold it whole


def render_table(frame: pl.DataFrame, total: int | None = None) -> str:
    """``frame`` as aligned columns under a header, then how many rows these are (of ``total``).

    Numbers are right-aligned and print as numbers (a DuckDB DECIMAL or HUGEINT too), text is cut
    at :data:`CELL_WIDTH` characters on one line, and a missing value is blank. When ``total`` is
    more than the rows shown, the last line says so and how to see the rest.
    """
    total = frame.height if total is None else total
    if frame.width == 0:
        return _row_count(0, total)
    columns = [[_cell(value) for value in frame.get_column(name).to_list()] for name in frame.columns]
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    widths = [max([len(name), *(len(v) for v in values)]) for name, values in zip(frame.columns, columns)]
    lines = [_aligned(frame.columns, widths, numeric), "  ".join("-" * w for w in widths)]
    lines += [_aligned(cells, widths, numeric) for cells in zip(*columns)]
    lines.append(_row_count(frame.height, total))
    return "\n".join(lines)


def _aligned(cells: list[str] | tuple[str, ...], widths: list[int], numeric: list[bool]) -> str:
    return "  ".join(c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, numeric)).rstrip()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value.normalize() if value == value.to_integral_value() else value, "f")
    if isinstance(value, float):
        return f"{value:.10g}"
    text = " ".join(str(value).split())
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def _row_count(shown: int, total: int) -> str:
    noun = "row" if total == 1 else "rows"
    if shown >= total:
        return f"({total:,} {noun})"
    return f"({shown:,} of {total:,} {noun}; --all or --limit N for more)"


def render_index_report(report) -> str:
    data = report.as_dict()
    lines = [
        f"documents: {len(data['new'])} added, {len(data['changed'])} changed, {len(data['deleted'])} deleted, {data['unchanged']} unchanged",
    ]
    if data.get("vanished"):
        lines.append(f"gone before they were read (the next index removes them): {', '.join(data['vanished'])}")
    if data["deleted_rows"]:
        lines.append("deleted rows: " + ", ".join(f"{t} {n}" for t, n in data["deleted_rows"].items() if n))
    for run in data["runs"]:
        state = "ok" if run["success"] else f"FAILED: {run['error']}"
        scope = f" ({len(run['partitions'])} document file(s))" if run["partitions"] else ""
        lines.append(f"run {run['job']}{scope}: {state}  [{run['run_id'][:8]}]")
    if not data["runs"]:
        lines.append("nothing to do: the index is up to date")
    if data["failed_documents"]:
        lines.append("extraction failed (left out of the graph): " + ", ".join(data["failed_documents"]))
    if data.get("parse_failures"):
        unparsed = data["parse_failures"]
        lines.append(
            f"extraction: {sum(unparsed.values())} record(s) in {len(unparsed)} document(s) could not be parsed and were "
            "left out ('graphrag-assets status' lists them)"
        )
    if data["usage"]:
        calls = sum(u["calls"] for u in data["usage"].values())
        cached = sum(u["cached"] for u in data["usage"].values())
        failed = sum(u.get("failed", 0) for u in data["usage"].values())
        lines.append(
            f"model calls: {calls} made{f' ({failed} failed)' if failed else ''}, {cached} answered from the cache"
        )
        if calls:
            lines.append(_run_cost(sum(u.get("cost_usd", 0.0) for u in data["usage"].values())))
        truncated = sum(u.get("truncated", 0) for u in data["usage"].values())
        if truncated:
            lines.append(
                f"  {truncated} answer(s) were cut short (token limit, or stopped inside a record): used as they are, not cached; the next index asks again"
            )
        for purpose, u in data["usage"].items():
            failures = f" ({u['failed']} failed)" if u.get("failed") else ""
            lines.append(
                f"  {purpose:<24} {u['calls']:>6} made {u['cached']:>6} cached {u['prompt_tokens'] + u['completion_tokens']:>10,} tokens{failures}"
            )
    if data.get("reports"):
        lines.append("community reports: " + render_report_outcomes(data["reports"]))
    graph = data.get("graph")
    if graph:
        lines.append(
            f"graph: {graph['entities']:,} entities, {graph['relationships']:,} relationships, "
            f"{graph['communities']:,} communities in {graph['levels']} level(s), {graph['reports']:,} reports"
        )
    lines.append(f"took {data['seconds']:.1f} s")
    return "\n".join(lines)


def _run_cost(dollars: float) -> str:
    """What the run's model calls cost, as estimated from ``llm.prices`` (and the default table)."""
    if not dollars:
        return "cost: not estimated (no price for the model; set llm.prices.<model> to see it)"
    return f"cost: ~{format_dollars(dollars)} (estimated from token counts and llm.prices)"


def format_dollars(dollars: float) -> str:
    """``$0.0042``, ``$1.37``: cents are not enough for the small runs most indexes are."""
    return f"${dollars:,.2f}" if dollars >= 1 else f"${dollars:.4f}"


REASON_WORDS = {  # each regenerated report's reason, as a reader understands it: (one, several)
    MEMBERS_CHANGED: ("new or changed community", "new or changed communities"),
    CHILD_REPORT_CHANGED: ("with a regenerated sub-community report", "with a regenerated sub-community report"),
    CONTEXT_CHANGED: ("whose entities or relationships changed", "whose entities or relationships changed"),
}


def render_report_outcomes(reports: dict[str, Any]) -> str:
    """``15 in all: 12 reused, 3 regenerated (2 new or changed communities, …); 1 old report deleted …``.

    A first build (nothing to reuse, nothing deleted) says so instead of counting every report as
    "members changed".
    """
    total, reused, deleted = reports["total"], reports["reused"], reports["deleted"]
    reasons = {reason: n for reason, n in reports.get("reasons", {}).items() if n}
    if not reused and not deleted and set(reasons) <= {MEMBERS_CHANGED}:
        return f"{total:,} written (no earlier reports to reuse)"
    because = ", ".join(
        f"{n:,} {REASON_WORDS[reason][n != 1] if reason in REASON_WORDS else reason}" for reason, n in reasons.items()
    )
    line = f"{total:,} in all: {reused:,} reused, {sum(reasons.values()):,} regenerated" + (
        f" ({because})" if because else ""
    )
    if deleted:
        line += f"; {deleted:,} earlier report{'s' if deleted != 1 else ''} deleted (their communities are gone)"
    return line


def render_clustering(communities: dict[str, Any]) -> str:
    """``communities: stable updates; last run warm start (2 since a fresh clustering), drift 0.41% (re-cluster above 2.00%)``."""
    line = f"communities: {communities['update']} updates"
    last = communities.get("last_run") or {}
    if not last:
        return line + "; not clustered yet"
    if last.get("clustering") == "warm":
        line += f"; last run warm start ({last.get('warm_starts')} since a fresh clustering)"
    else:
        line += f"; last run clustered from scratch ({last.get('clustering_reason')})"
    if communities["update"] == "stable":
        line += f", drift {float(last.get('drift') or 0.0):.2%} (re-cluster above {communities['drift_threshold']:.2%})"
        age = last.get("drift_age") or 0
        if age:
            line += f", against the fresh clustering of {age} update{'s' if age != 1 else ''} before"
    return line


def render_status(report: dict[str, Any]) -> str:
    docs = report["documents"]
    lines = [
        f"project:  {report['root']}",
        f"method:   {report['method']}",
        f"database: {report['database']}",
        "",
        "input changes since last index: "
        + f"{len(docs['new'])} new, {len(docs['changed'])} changed, {len(docs['deleted'])} deleted, {docs['unchanged']} unchanged",
    ]
    paths = docs.get("paths", {})
    for label in ("new", "changed", "deleted"):
        for key in docs[label][:20]:
            lines.append(f"  {label:<8} {paths.get(key, key)}")
    for skipped in docs["skipped"]:
        lines.append(f"  skipped  {skipped['message']}")
    for entry in docs.get("passed_over", []):
        lines.append(f"  skipped  {entry}")
    for failed in docs["failed"]:
        lines.append(
            f"  failed   {paths.get(failed['document_key'], failed['document_key'])}: extraction failed ({failed['error']}); 'index' retries it"
        )
    for unparsed in docs.get("parse_failures", []):
        lines.append(
            f"  partial  {paths.get(unparsed['document_key'], unparsed['document_key'])}: {unparsed['parse_failures']} "
            "extraction record(s) could not be parsed and were left out (extraction_status.parse_failures)"
        )
    interrupted = report.get("interrupted_update")
    if interrupted:
        command = interrupted.get("command", "index")
        lines.append(
            f"last update: the 'graphrag-assets {command}' started at {interrupted.get('started_at')} (pid {interrupted.get('pid')}) "
            "was stopped before it finished; run it again to finish"
            + (" (model calls already made are not repeated)" if command == "index" else "")
        )
    corpus = report["corpus"]
    lines.append(_corpus_state(corpus, bool(docs["new"] or docs["changed"] or docs["deleted"])))
    if corpus.get("built"):
        if corpus.get("lancedb_missing"):
            lines.append(
                "  the index has outgrown in-memory search and has no LanceDB tables yet; 'graphrag-assets index' builds them"
            )
        if corpus.get("truncated_answers"):
            lines.append(
                f"  {corpus['truncated_answers']} model answer(s) of the last corpus run were cut off at the token limit; "
                "they were not cached, and 'graphrag-assets index --full' asks again"
            )
        if corpus.get("left_out"):
            lines.append("  left out (extraction failed): " + ", ".join(corpus["left_out"]))
    if report.get("communities"):
        lines.append(render_clustering(report["communities"]))
    lines.append("")
    lines.append("tables:")
    if not report["tables"]:
        lines.append("  (none yet: run 'graphrag-assets index')")
    for table, rows in report["tables"].items():
        lines.append(f"  {table:<30} {rows:>10,} rows")
    return "\n".join(lines)


def _corpus_state(corpus: dict[str, Any], pending: bool) -> str:
    """The one "corpus graph:" line: an unfinished update says more than stale or up to date."""
    finishing = "'graphrag-assets index' finishes it (model calls already made are not repeated)"
    if corpus.get("unfinished") and corpus.get("update_running"):
        return "corpus graph: an update is running (its tables are published when it finishes)"
    if corpus.get("unfinished"):
        if not corpus.get("built"):
            return f"corpus graph: not built yet; the first build stopped before it was published, and {finishing}"
        return f"corpus graph: the last update stopped before it was published; queries use the previous build, and {finishing}"
    if not corpus.get("built"):
        return "corpus graph: not built yet"
    if corpus["stale"]:
        since = corpus["documents_since_build"]
        settings_note = "; corpus settings changed" if corpus.get("settings_changed") else ""
        return (
            f"corpus graph: stale ({len(since['added'])} added, {len(since['changed'])} changed, "
            f"{len(since['removed'])} removed since it was built{settings_note})"
        )
    if pending:
        return (
            "corpus graph: up to date with the indexed documents; 'graphrag-assets index' adds the input changes above"
        )
    return "corpus graph: up to date"


SHOWN_RELATIONSHIPS = 20
QUOTE_CHARS = 100


def passage_line(citation: Citation) -> str:
    """``Sources (3f9a2c1b): notes.txt, chars 120-188: "…"``; a row of a tabular file is named too."""
    where = citation.path or citation.title
    if citation.record is not None:
        where += f" record {citation.record} ({citation.title})"
    span = "offsets unknown" if citation.start is None else f"chars {citation.start}-{citation.end}"
    quote = shorten(" ".join(citation.text.split()), QUOTE_CHARS)
    return f'Sources ({citation.citation}): {where}, {span}: "{quote}"'


def render_query_result(result, *, show_answer: bool = True, show_context: bool = False) -> str:
    """The answer, what it cites (by name), then what it was built from and what it cost."""
    # Warnings first (an off-topic question, say): read before the answer or passages they qualify.
    lines = [
        f"warning: {w}" for w in result.warnings if w not in result.answer
    ]  # DRIFT's "needs an LLM" is in the answer
    if show_answer:
        if lines:
            lines.append("")
        lines.append(result.answer.strip())
    records = result.context_records
    cited = cited_records(result.answer, records)
    if cited:
        lines.append("")
        lines.append("cited:")
        for kind, citation, title in cited:
            lines.append(f"  {kind.capitalize()} ({citation}): {title}")
    if result.citations:
        lines.append("")
        lines.append("cited passages (character offsets in the original document):")
        lines += [f"  {passage_line(c)}" for c in result.citations]
    counts = ", ".join(
        f"{len(getattr(records, kind))} {kind}"
        for kind in ("reports", "entities", "relationships", "claims", "sources")
        if getattr(records, kind)
    )
    usage = result.usage
    lines.append("")
    lines.append(f"context: {counts or 'nothing'}")
    model = (
        f"{usage.chat_calls} model call(s), {usage.prompt_tokens + usage.completion_tokens} tokens"
        if result.llm_used
        else "no language model used"
    )
    lines.append(f"{result.method} search: {model}, {usage.seconds:.2f} s")
    if show_context:
        lines.append("")
        lines.append(result.context_text)
    return "\n".join(lines)


def render_entity(detail: dict[str, Any]) -> str:
    """An entity as ``show entity`` prints it."""
    lines = [f"{detail['title']} ({detail['type'] or 'no type'}, {detail['degree']} relationships)", ""]
    lines.append((detail["description"] or "(no description)").strip())
    if detail["aliases"]:
        lines += ["", "also called: " + ", ".join(detail["aliases"])]
    relationships = detail["relationships"]
    if relationships:
        lines += ["", "relationships (strongest first):"]
        lines += [
            f"  {r['other']} (weight {r['weight']:g}): {(r['description'] or '').strip()[:160]}"
            for r in relationships[:SHOWN_RELATIONSHIPS]
        ]
        if len(relationships) > SHOWN_RELATIONSHIPS:
            lines.append(f"  … and {len(relationships) - SHOWN_RELATIONSHIPS} more (--json lists them all)")
    if detail["communities"]:
        lines += ["", "communities:"]
        lines += [
            f"  level {c['level']}: community {c['community']} ({c['size']} entities) {c['report'] or ''}".rstrip()
            for c in detail["communities"]
        ]
    if detail["sources"]:
        lines += ["", "sources:"]
        lines += [f"  {s['path']} ({s['text_units']} text unit(s))" for s in detail["sources"]]
    return "\n".join(lines)


def render_report(detail: dict[str, Any]) -> str:
    """A community report as ``show report`` prints it: its place in the hierarchy, then the text."""
    head = (
        f"community {detail['community']}, level {detail['level']}, {detail['size']} entities, rank {detail['rank']:g}"
    )
    return f"{head}\n\n{(detail['full_content'] or '').strip()}"
