"""The query prompts by name: the placeholders each must contain, and the caller's replacement or
the built-in template."""

from __future__ import annotations

from collections.abc import Mapping

from graphrag_assets.prompts.templates import PromptTemplate, load_prompt

# Placeholders each query prompt must contain (checked when a user's replacement is loaded).
QUERY_PROMPT_PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "local_search": ("context_data",),
    "basic_search": ("context_data",),
    "global_map": ("context_data",),
    "global_reduce": ("report_data",),
    "global_rate": ("query", "report"),
    "drift_hyde": ("query", "template"),
    "drift_primer": ("query", "community_reports"),
    "drift_local": ("context_data", "global_query"),
    "drift_reduce": ("context_data",),
}

PromptOverrides = Mapping[str, PromptTemplate]


def query_prompt(name: str, overrides: PromptOverrides | None = None) -> PromptTemplate:
    """The prompt ``name``: the caller's template when given, else the built-in one."""
    if overrides and name in overrides:
        return overrides[name]
    return load_prompt(name, required=QUERY_PROMPT_PLACEHOLDERS[name])
