"""Human-readable rendering of CLI results."""

from __future__ import annotations

from typing import Any

import polars as pl


def render_frame(frame: pl.DataFrame, limit: int = 200) -> str:
    """A plain text table (polars' own formatting, wide enough for real values)."""
    with pl.Config(tbl_rows=limit, tbl_cols=-1, fmt_str_lengths=80, tbl_width_chars=200, tbl_hide_dataframe_shape=False):
        return str(frame.head(limit))


def render_index_report(report) -> str:
    data = report.as_dict()
    lines = [
        f"method: {data['method']}",
        f"documents: {len(data['new'])} added, {len(data['changed'])} changed, {len(data['deleted'])} deleted, {data['unchanged']} unchanged",
    ]
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
    if data["usage"]:
        calls = sum(u["calls"] for u in data["usage"].values())
        cached = sum(u["cached"] for u in data["usage"].values())
        lines.append(f"model calls: {calls} made, {cached} answered from the cache")
        for purpose, u in data["usage"].items():
            lines.append(f"  {purpose:<24} {u['calls']:>6} made {u['cached']:>6} cached {u['prompt_tokens'] + u['completion_tokens']:>10,} tokens")
    if data.get("reports"):
        lines.append("community reports: " + render_report_outcomes(data["reports"]))
    lines.append(f"took {data['seconds']:.1f} s")
    return "\n".join(lines)


def render_report_outcomes(reports: dict[str, Any]) -> str:
    """``12 reused, 3 regenerated (2 members changed, 1 context changed), 1 deleted (of 15 reports)``."""
    from graphrag_assets.index.report_reuse import ReuseSummary

    reasons = {reason: n for reason, n in reports.get("reasons", {}).items() if n}
    return ReuseSummary(reports["total"], reports["reused"], reasons, reports["deleted"]).line()


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
    for label in ("new", "changed", "deleted"):
        for key in docs[label][:20]:
            lines.append(f"  {label:<8} {key}")
    for skipped in docs["skipped"]:
        lines.append(f"  skipped  {skipped['document_key']}: {skipped['message']}")
    for failed in docs["failed"]:
        lines.append(f"  failed   {failed['document_key']}: extraction failed ({failed['error']}); 'index' retries it")
    corpus = report["corpus"]
    if not corpus.get("built"):
        lines.append("corpus graph: not built yet")
    else:
        since = corpus["documents_since_build"]
        state = "stale" if corpus["stale"] else "up to date"
        settings_note = "; corpus settings changed" if corpus.get("settings_changed") else ""
        lines.append(
            f"corpus graph: {state} ({len(since['added'])} added, {len(since['changed'])} changed, {len(since['removed'])} removed since it was built{settings_note})"
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


def render_query_result(result, *, show_answer: bool = True, show_context: bool = False) -> str:
    """The answer, then what it was built from and what it cost."""
    lines: list[str] = []
    if show_answer:
        lines.append(result.answer.strip())
    records = result.context_records
    counts = ", ".join(
        f"{len(getattr(records, kind))} {kind}"
        for kind in ("reports", "entities", "relationships", "claims", "sources")
        if getattr(records, kind)
    )
    usage = result.usage
    lines.append("")
    lines.append(f"context: {counts or 'nothing'}")
    model = f"{usage.chat_calls} model call(s), {usage.prompt_tokens + usage.completion_tokens} tokens" if result.llm_used else "no language model used"
    lines.append(f"{result.method} search: {model}, {usage.seconds:.2f} s")
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    if show_context:
        lines.append("")
        lines.append(result.context_text)
    return "\n".join(lines)
