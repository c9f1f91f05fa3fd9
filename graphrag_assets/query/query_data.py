"""What a search reads: the index tables as polars frames and the search indexes over them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from graphrag_assets.core.schemas import (
    COMMUNITIES,
    COMMUNITY_REPORTS,
    COVARIATES,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    TEXT_UNITS,
    empty_frame,
)
from graphrag_assets.query.array_index import empty_index
from graphrag_assets.query.search_indexes import LexicalIndex, VectorIndex


@dataclass
class QueryData:
    """The index as the query engines see it. Frames follow :mod:`graphrag_assets.core.schemas`."""

    entities: pl.DataFrame = field(default_factory=lambda: empty_frame(ENTITIES))
    relationships: pl.DataFrame = field(default_factory=lambda: empty_frame(RELATIONSHIPS))
    communities: pl.DataFrame = field(default_factory=lambda: empty_frame(COMMUNITIES))
    community_reports: pl.DataFrame = field(default_factory=lambda: empty_frame(COMMUNITY_REPORTS))
    text_units: pl.DataFrame = field(default_factory=lambda: empty_frame(TEXT_UNITS))
    covariates: pl.DataFrame = field(default_factory=lambda: empty_frame(COVARIATES))
    documents: pl.DataFrame = field(default_factory=lambda: empty_frame(DOCUMENTS))
    entity_description: VectorIndex = field(default_factory=empty_index)  # ids: entity ids
    text_unit_text: VectorIndex = field(default_factory=empty_index)  # ids: text unit ids
    community_full_content: VectorIndex = field(default_factory=empty_index)  # ids: report ids
    text_unit_lexical: LexicalIndex | None = None  # ids: text unit ids; None: the index has no full-text index
    # Structures derived from the frames above (the local-ranking graph), built on first use and
    # reused by every query in the process; not copied by dataclasses.replace.
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
