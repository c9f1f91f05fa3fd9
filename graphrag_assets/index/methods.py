"""What each indexing method does at each step, decided in one place.

The three methods differ in four steps; the assets, the fingerprints of the settings each step
depends on, and the dry run all read this table instead of comparing method names themselves.

| method   | extraction                | graph                                   | resolution verdicts | reports                        |
|----------|---------------------------|-----------------------------------------|---------------------|--------------------------------|
| standard | the model, per text unit  | merged records, descriptions summarized | the model           | the model, from the graph      |
| fast     | noun phrases (offline)    | noun-phrase co-occurrence, pruned       | offline rules       | the model, from the text units |
| nlp      | noun phrases (offline)    | noun-phrase co-occurrence, pruned       | offline rules       | extractive (offline)           |

(Entity resolution itself runs only when ``resolution.enabled`` is set.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graphrag_assets.core.settings import Method


@dataclass(frozen=True)
class MethodSteps:
    extraction: Literal["model", "noun_phrases"]
    graph: Literal["summarized", "co_occurrence"]
    reports: Literal["graph", "text", "extractive"]  # graph / text: written by the model from that context
    resolution: Literal["model", "rules"]  # who judges entity-resolution candidates

    @property
    def model_reports(self) -> bool:
        return self.reports != "extractive"


STEPS: dict[Method, MethodSteps] = {
    "standard": MethodSteps("model", "summarized", "graph", "model"),
    "fast": MethodSteps("noun_phrases", "co_occurrence", "text", "rules"),
    "nlp": MethodSteps("noun_phrases", "co_occurrence", "extractive", "rules"),
}


def method_steps(method: Method) -> MethodSteps:
    return STEPS[method]
