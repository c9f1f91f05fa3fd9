"""Fingerprints of the settings that shape each stage's output.

A document partition is re-run when its file changed *or* when the settings its rows were made
with changed (another method, chunk size, entity types, prompt file, model). The fingerprint is
stored with the document's ``source_files`` row, so ``index`` and the sensor notice either.
"""

from __future__ import annotations

import json

from graphrag_assets.core.ids import stable_hash
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.noun_phrases import NOUN_PHRASE_RULES_VERSION
from graphrag_assets.llm.static_model_files import local_embedder_name
from graphrag_assets.prompts.templates import load_prompt

# Bumped when a release changes how documents are read or chunked (e.g. line endings, cut
# characters at chunk edges), so existing indexes re-ingest their documents on the next run.
# 3: the text units' LanceDB table stores their text under a full-text index (hybrid search).
# 4: text units record their character offsets in the document (start_char/end_char) for citations.
DOCUMENT_PIPELINE_VERSION = 4

# ``communities`` settings that choose how an update clusters, not what a rebuild produces.
UPDATE_POLICY_SETTINGS = ("update", "drift_threshold", "recluster_every", "drift_every")


def _prompt_version(name: str, override: str | None, settings: Settings) -> str:
    return load_prompt(name, override, settings.root).version


def document_fingerprint(settings: Settings) -> str:
    """Hash of every setting that per-document assets (ingest, extraction, embeddings) depend on."""
    method = settings.resolved_method
    steps = method_steps(method)
    parts: dict[str, object] = {
        "pipeline": DOCUMENT_PIPELINE_VERSION,
        "input": settings.input.model_dump(exclude={"dir"}),
        "chunking": settings.chunking.model_dump(),
        "method": method,
        "embeddings": local_embedder_name(settings.embeddings)
        if settings.llm.use_local_embedder
        else settings.llm.embedding_model,
        "local_dimension": settings.embeddings.local_dimension if settings.llm.use_local_embedder else None,
    }
    if steps.extraction == "model":
        extraction = settings.extraction
        parts["extraction"] = {
            "entity_types": extraction.entity_types,
            "max_gleanings": extraction.max_gleanings,
            "prompt": _prompt_version("extract_graph", extraction.prompt, settings),
            "claims": extraction.claims.model_dump(exclude={"prompt"}),
            "claims_prompt": _prompt_version("extract_claims", extraction.claims.prompt, settings)
            if extraction.claims.enabled
            else None,
            "model": settings.llm.chat_model,
        }
    else:
        parts["nlp"] = {"max_word_length": settings.nlp.max_word_length, "rules": NOUN_PHRASE_RULES_VERSION}
    return stable_hash(json.dumps(parts, sort_keys=True, default=str))[:16]


def corpus_fingerprint(settings: Settings) -> str:
    """Hash of every setting the corpus-wide assets depend on (graph, communities, reports, embeddings).

    Stored in ``corpus_manifest``; when it differs, the corpus graph is stale even if no document
    changed (a new cluster size, pruning rule, report prompt or model, entity resolution switched
    on or off or configured differently). Resolution adds to the hash only when it is on, so
    indexes built before it existed are not made stale by its arrival.
    """
    method = settings.resolved_method
    steps = method_steps(method)
    parts: dict[str, object] = {
        "method": method,
        # How updates cluster is not part of it: switching modes must not rebuild anything.
        "communities": settings.communities.model_dump(exclude=set(UPDATE_POLICY_SETTINGS)),
        "embeddings": local_embedder_name(settings.embeddings)
        if settings.llm.use_local_embedder
        else settings.llm.embedding_model,
        "local_dimension": settings.embeddings.local_dimension if settings.llm.use_local_embedder else None,
    }
    if steps.graph == "summarized":
        parts["summarize"] = settings.summarize.model_dump(exclude={"prompt"})
        parts["summarize_prompt"] = _prompt_version("summarize_descriptions", settings.summarize.prompt, settings)
    else:
        parts["nlp"] = settings.nlp.model_dump()
    # Imported only when used: entity resolution and the report generator pull in numpy, pyarrow and
    # the JSON repair library, which 'status' and 'index' with nothing to do would load for nothing.
    if settings.resolution.enabled:
        from graphrag_assets.index.entity_resolution import resolution_fingerprint

        parts["resolution"] = resolution_fingerprint(settings)
    if steps.model_reports:
        from graphrag_assets.index.community_reports import report_options

        parts["reports"] = settings.reports.model_dump(exclude={"prompt", "text_prompt"})
        parts["reports_prompt"] = report_options(settings).template.version
        parts["chat_model"] = settings.llm.chat_model
    return stable_hash(json.dumps(parts, sort_keys=True, default=str))[:16]
