"""The README stays a short front page that tells the truth about the CLI and points at docs that exist.

A command added to the click group without a row in the README's table, a link to a moved or renamed
doc (or to a heading that no longer exists) and a README grown past a few screens all fail here,
instead of being found by a reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from graphrag_assets.cli.main import main

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 350
CLI_SECTION = "## Command line"

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")  # a pipe not escaped as \| inside a cell
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, ...


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every command a user can type, subgroups' commands included (``show entities``, ...)."""
    ctx = click.Context(group, info_name=" ".join(prefix) or "graphrag-assets")
    paths: list[str] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        path = (*prefix, name)
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, path))
        else:
            paths.append(" ".join(path))
    return paths


def cli_table_commands(readme: str) -> list[str]:
    """The first cell of each row of the README's command table, without backticks."""
    section = readme.split(CLI_SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")]
    return [CELL_SEPARATOR.split(row)[1].strip().strip("`") for row in rows[1:]]  # rows[0] is the header


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower case, punctuation dropped, spaces as hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("*", "")  # emphasis
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Heading anchors (numbered -1, -2, ... when repeated, as GitHub does) and explicit HTML anchors."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(text):
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    """Targets of the file's markdown links that point inside the repository (code blocks and spans skipped)."""
    text = INLINE_CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(text) if not EXTERNAL.match(target)]


def broken_links(path: Path) -> list[str]:
    """Each link of ``path`` whose file is missing or whose ``#anchor`` is not a heading of that file."""
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target} (no heading '#{anchor}' in {linked.name})")
    return broken


def test_every_cli_command_is_in_the_readme_table():
    listed = cli_table_commands(README.read_text(encoding="utf-8"))
    commands = command_paths(main)
    assert "show entities" in commands  # the walk reaches subgroups' commands
    missing = [
        path
        for path in commands
        if not any(re.match(rf"graphrag-assets {re.escape(path)}(\s|$)", cell) for cell in listed)
    ]
    assert not missing, f"commands missing from the README's '{CLI_SECTION}' table: {missing}"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(path: Path):
    assert not broken_links(path), f"{path.relative_to(REPO)}: broken links {broken_links(path)}"


def test_docs_index_lists_every_page():
    index = REPO / "docs" / "README.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in relative_links(index)}
    unlisted = [page.name for page in DOCS if page != index and page.resolve() not in linked]
    assert not unlisted, f"docs/README.md does not link {unlisted}"


def test_readme_fits_on_a_few_screens():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail to docs/ (limit {MAX_README_LINES})"


def test_slugs_follow_github():
    """The slug rules the link check relies on, on headings of the kind the docs use."""
    assert github_slug("Update stability — `python bench/bench_incremental.py --scenario stability`") == (
        "update-stability--python-benchbench_incrementalpy---scenario-stability"
    )
    assert github_slug("Serving over HTTP: chat front-ends, an API and a web page") == (
        "serving-over-http-chat-front-ends-an-api-and-a-web-page"
    )
    assert github_slug("Retrieval *without* a [model](x.md)") == "retrieval-without-a-model"
