"""The running text of a source, for sentences that answer or are cited.

Its own module, with nothing but ``re``, because citations resolve their spans with it in commands
that must not load numpy (the CLI's reading commands print cited records).
"""

from __future__ import annotations

import re

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.MULTILINE)
_CITATION = re.compile(r"\s*\[Data:[^\]]*\]")


def prose(text: str) -> str:
    """The running text of a source: markdown headings and ``[Data: ...]`` citations removed.

    Headings (report titles, finding summaries, document titles) are labels, not statements,
    and a source's own citations would be cited twice.
    """
    return _CITATION.sub("", _HEADING.sub("", text))


def prose_in_place(text: str) -> str:
    """:func:`prose` with what it removes blanked out (line breaks kept) rather than cut, so a
    position in it is the same position in ``text``: a citation's span is counted in ``text``."""
    return _CITATION.sub(_blank, _HEADING.sub(_blank, text))


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group())
