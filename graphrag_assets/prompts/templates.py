"""Loading and filling prompt templates.

Prompts are ``.txt`` files in :mod:`graphrag_assets.prompts` (read with importlib.resources so
they are found when the package is installed) or files the user points to in the settings
(paths relative to the project root). Placeholders are Python ``str.format`` style ``{name}``;
literal braces are written doubled (``{{`` and ``}}``).

A user's prompt file is checked when it is loaded, so a typo is reported before any model call
is paid for: the file must exist, be UTF-8, have balanced braces, use only plain ``{name}``
placeholders, and contain every placeholder the caller marks as required (the place where
the text to analyse goes, for instance). Placeholders the caller supplies but the template
does not use are fine: that lets a prompt tuned for Microsoft GraphRAG, which writes its
delimiters as ``{tuple_delimiter}`` and so on, and ours, which spell them out, share one loader.

``version`` is a short hash of the text; it goes into the LLM cache key, so editing a prompt
invalidates exactly the answers produced with the old one.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from graphrag_assets.core.errors import UserError

PROMPTS_PACKAGE = "graphrag_assets.prompts"

# Placeholders that must appear in a prompt of each kind, or the prompt cannot do its job.
# Other modules that add prompt kinds pass ``required=`` to :func:`load_prompt` instead.
REQUIRED_PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "extract_graph": ("input_text",),
    "extract_graph_continue": (),
    "extract_graph_loop_check": (),
    "extract_claims": ("input_text",),
    "extract_claims_continue": (),
    "summarize_descriptions": ("description_list",),
    "community_report": ("input_text",),
    "community_report_text": ("input_text",),
    "community_report_reask": (),
    "resolve_entities": ("entity_list",),
}

# What each required placeholder is for, so the error can say where to put it.
PLACEHOLDER_PURPOSE: dict[str, str] = {
    "input_text": "where the text to analyse should go",
    "description_list": "where the list of descriptions to merge should go",
    "entity_name": "where the name of the entity being described should go",
    "entity_types": "where the list of entity types should go",
    "claim_description": "where the description of the claims to look for should go",
    "entity_list": "where the numbered list of possibly duplicate entities should go",
}


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt's text, its placeholders, and a content hash used as cache version."""

    name: str
    text: str
    version: str = field(init=False)
    source: str = ""  # what to call the file in messages ("built-in prompt x" or the user's path)
    placeholders: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "version", prompt_version(self.text))
        object.__setattr__(self, "placeholders", _placeholders(self.text, self.source or self.name))

    def format(self, **values: object) -> str:
        """Fill the placeholders; values the template does not use are ignored."""
        missing = [name for name in self.placeholders if name not in values]
        if missing:
            available = ", ".join("{" + name + "}" for name in sorted(values)) or "none"
            raise UserError(
                f"{self._where()} uses the placeholder {{{missing[0]}}}, which this step does not provide "
                f"(available: {available}); remove it or write literal braces doubled."
            )
        parts: list[str] = []
        for literal, name, spec, conversion in string.Formatter().parse(self.text):
            parts.append(literal)
            if name is not None:
                value = values[name]
                if conversion == "r":
                    value = repr(value)
                elif conversion == "a":
                    value = ascii(value)
                parts.append(format(value, spec or ""))
        return "".join(parts)

    def require(self, names: Iterable[str]) -> None:
        """Raise a :class:`UserError` naming the first required placeholder the text lacks."""
        for name in names:
            if name not in self.placeholders:
                purpose = PLACEHOLDER_PURPOSE.get(name, "where that value should go")
                raise UserError(f"{self._where()} has no {{{name}}} placeholder; add it {purpose}.")

    def _where(self) -> str:
        return self.source or f"prompt {self.name}"


def prompt_version(text: str) -> str:
    """Short SHA-256 of a prompt's text (12 hex digits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def builtin_prompt_names() -> list[str]:
    """Names of the prompts shipped with the package (file names without ``.txt``)."""
    folder = resources.files(PROMPTS_PACKAGE)
    return sorted(p.name[: -len(".txt")] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_prompt(
    name: str,
    override: str | Path | None = None,
    root: Path | None = None,
    required: Iterable[str] | None = None,
) -> PromptTemplate:
    """Load the built-in prompt ``name``, or the user's file ``override`` (relative to ``root``).

    ``required`` lists placeholders the prompt must contain; by default those declared for
    ``name`` in :data:`REQUIRED_PLACEHOLDERS`. Problems with a user's file raise
    :class:`UserError`; an unknown built-in name is a programming error (``ValueError``).
    """
    needed = tuple(REQUIRED_PLACEHOLDERS.get(name, ()) if required is None else required)
    if override is None or str(override).strip() == "":
        resource = resources.files(PROMPTS_PACKAGE).joinpath(f"{name}.txt")
        if not resource.is_file():
            raise ValueError(f"no built-in prompt named {name!r}; known: {', '.join(builtin_prompt_names())}")
        template = PromptTemplate(name, resource.read_text(encoding="utf-8"), source=f"built-in prompt {name}.txt")
    else:
        shown = str(override)
        path = Path(override).expanduser()
        if not path.is_absolute() and root is not None:
            path = Path(root) / path
        if not path.is_file():
            raise UserError(
                f"prompt file {shown} for {name} was not found (looked at {path}); "
                f"fix the path in graphrag.yaml or remove the setting to use the built-in prompt."
            )
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise UserError(f"prompt file {shown} is not valid UTF-8 text; save it as UTF-8.") from None
        except OSError as exc:
            raise UserError(
                f"prompt file {shown} could not be read ({exc.strerror or exc}); check its permissions."
            ) from None
        template = PromptTemplate(name, text, source=f"prompt file {shown}")
    template.require(needed)
    return template


def _placeholders(text: str, where: str) -> tuple[str, ...]:
    """Distinct placeholder names in order of first use; a :class:`UserError` for bad syntax."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise UserError(
            f"{where} has an unmatched brace ({exc}); write literal braces doubled as {{{{ and }}}}."
        ) from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or (spec and "{" in spec):
            written = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise UserError(
                f"{where} contains {{{written}}}, which is not a plain placeholder name; "
                f"use names like {{input_text}} and write literal braces doubled as {{{{ and }}}}."
            )
        if name not in names:
            names.append(name)
    return tuple(names)
