"""The names of the project database's tables, in one place.

Tables live in DuckDB's default schema under these plain names (``SELECT * FROM entities`` works
from the DuckDB CLI), so a name is part of what users and other tools see: spell it from here.
"""

from __future__ import annotations

# Per-document tables: written by the document steps, one partition per document.
SOURCE_FILES = "source_files"
DOCUMENTS = "documents"
TEXT_UNITS = "text_units"
GRAPH_EXTRACTIONS = "graph_extractions"
EXTRACTION_STATUS = "extraction_status"
TEXT_UNIT_EMBEDDINGS = "text_unit_embeddings"

# Corpus tables: written together by the corpus run that publishes a build.
ENTITIES = "entities"
RELATIONSHIPS = "relationships"
COVARIATES = "covariates"
COMMUNITIES = "communities"
COMMUNITY_REPORTS = "community_reports"
PHRASE_DESCRIPTIONS = "phrase_descriptions"  # nlp method: each noun phrase's description, under a key of its units
PHRASE_UNITS = "phrase_units"  # nlp method: the text units those descriptions were read from
REPORT_NAME_VOTES = "report_name_votes"  # extractive reports: how each text unit spells its entities
REPORT_SENTENCES = "report_sentences"  # extractive reports: which entities each sentence of a unit mentions
ENTITY_EMBEDDINGS = "entity_embeddings"
COMMUNITY_REPORT_EMBEDDINGS = "community_report_embeddings"
CORPUS_MANIFEST = "corpus_manifest"
CORPUS_BUILD = "corpus_build"

# The model's tables: the response cache, who owns its rows, usage, and what servers accept.
CHAT_CACHE = "llm_cache"
EMBEDDING_CACHE = "embedding_cache"
CACHE_OWNERS = "llm_cache_owners"
USAGE = "llm_usage"
CAPABILITIES = "llm_capabilities"
