"""Where the offline static embedding model lives: the installed ``wordllama`` wheel's own files.

Kept apart from :mod:`.static_embedder` (numpy, the tokenizer) so that naming the model — for the
index fingerprint that ``status`` computes — imports nothing heavy and runs none of the package.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_assets.core.errors import UserError

if TYPE_CHECKING:
    from graphrag_assets.core.settings import EmbeddingSettings

PACKAGE = "wordllama"
CONFIG = "l2_supercat"
DIMENSION = 256
WEIGHTS_FILE = f"weights/{CONFIG}_{DIMENSION}.safetensors"
TOKENIZER_FILE = f"tokenizers/{CONFIG}_tokenizer_config.json"
FALLBACK_HINT = "or set embeddings.local_model: hashing in graphrag.yaml"


def package_dir() -> Path:
    """The installed ``wordllama`` package's folder, found without importing (running) the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            f"the offline embedder needs the 'wordllama' package, which is not installed; "
            f"reinstall graphrag-assets, {FALLBACK_HINT}."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_name() -> str:
    """``wordllama-l2_supercat-256-<wheel version>``: what the vectors are stored under."""
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "missing"
    return f"{PACKAGE}-{CONFIG}-{DIMENSION}-{version}"


def local_embedder_name(embedding_settings: EmbeddingSettings) -> str:
    """What the offline embedder the settings choose is called, for the index fingerprints.

    Hashing keeps the name ``local`` it always had, so hashing indexes built before the static
    model existed are not made stale; the static model's name carries the wheel's version, so a
    project re-embeds once when it switches embedders or the wheel changes.
    """
    if embedding_settings.local_model == "hashing":
        return "local"
    if embedding_settings.local_model == "combined":
        return f"{model_name()}+local-hash-{embedding_settings.local_dimension}"
    return model_name()


def offline_embedder_label(embedding_settings: EmbeddingSettings) -> str:
    """One phrase for the CLI saying which offline embedder the index uses, and how to switch."""
    hashing = f"local-hash-v1-{embedding_settings.local_dimension}"
    if embedding_settings.local_model == "hashing":
        return f"{hashing} (feature hashing, embeddings.local_model: hashing)"
    if embedding_settings.local_model == "combined":
        return f"{model_name()} + {hashing} (static model from the installed wheel plus feature hashing)"
    return f"{model_name()} (static model from the installed wordllama wheel, no download)"
