"""The emulated servers the README's "Using your model" snippets are tested against.

One server per profile (:mod:`.server_profiles`), answering like a model
(:mod:`.graphrag_responder`), shared by the whole session (``profile_servers`` fixture); projects
are configured with the README's own snippet for that kind of server.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer
from graphrag_assets_testkit.server_profiles import ProfileSpec

REPO = Path(__file__).resolve().parents[1]
RESPONDER = "graphrag_assets_testkit.graphrag_responder:respond"
OPENAI_KEY = "sk-test-profiles-0123456789"
AZURE_KEY = "azure-test-key-0123456789"
VLLM_KEY = "vllm-test-key"
VLLM_WINDOW = 2000  # above every indexing prompt of the small project, below its largest query prompts
# profile -> (first words of its README snippet, how its server is started)
PROFILES: dict[str, tuple[str, ProfileSpec]] = {
    "openai": ("# OpenAI\n", ProfileSpec("openai", api_key=OPENAI_KEY)),
    "reasoning": ("# OpenAI reasoning models", ProfileSpec("reasoning", api_key=OPENAI_KEY)),
    "azure": ("# Azure OpenAI", ProfileSpec("azure", api_key=AZURE_KEY)),
    "ollama": ("# Ollama", ProfileSpec("ollama", load_seconds=0.5)),
    "vllm": ("# vLLM", ProfileSpec("vllm", api_key=VLLM_KEY, options={"max_model_len": VLLM_WINDOW})),
    "no-dimensions": ("# llama.cpp", ProfileSpec("no-dimensions")),
    "base64": ("# LiteLLM", ProfileSpec("base64", api_key=OPENAI_KEY)),
}
EXTRA = {"no-dimensions": {"llm": {"embedding_dimensions": 32}}}  # asked for, to see it ignored
TEST_SETTINGS = {"method": "standard", "llm": {"max_retries": 2, "retry_base_delay": 0.01, "retry_max_delay": 0.05}}
PLACEHOLDER_URLS = re.compile(r"https://YOUR-RESOURCE\.openai\.azure\.com|http://localhost:\d+/v1")


def readme_snippets() -> dict[str, str]:
    """The YAML snippets of the README's "Using your model" section, by their first line."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using your model", 1)[1].split("\n## ", 1)[0]
    return {block.splitlines()[0]: block for block in re.findall(r"```yaml\n(.*?)```", section, re.S)}


def snippet_for(profile: str) -> str:
    first_words = PROFILES[profile][0]
    [snippet] = [s for first, s in readme_snippets().items() if (first + "\n").startswith(first_words)]
    return snippet


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _merge(merged.get(key) or {}, value) if isinstance(value, dict) else value
    return merged


def environment(server: ScriptedOpenAIServer) -> dict[str, str]:
    """What the snippets' ``${VARS}`` (and the OpenAI ones' default base URL) come from."""
    return {
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": server.base_url,
        "AZURE_OPENAI_API_KEY": AZURE_KEY,
        "VLLM_API_KEY": VLLM_KEY,
        "LITELLM_API_KEY": OPENAI_KEY,
    }


def write_settings(root: Path, profile: str, server: ScriptedOpenAIServer, extra: dict[str, Any] | None = None) -> None:
    """graphrag.yaml: the README snippet with the emulated server's URL, fast retries, ``extra``."""
    url = server.root_url if profile == "azure" else server.base_url
    config = yaml.safe_load(PLACEHOLDER_URLS.sub(url, snippet_for(profile)))
    config = _merge(_merge(_merge(config, TEST_SETTINGS), EXTRA.get(profile, {})), extra or {})
    (root / "graphrag.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def configure(root: Path, profile: str, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings for ``root`` through ``server``, with the environment the snippet expects."""
    write_settings(root, profile, server)
    for name, value in environment(server).items():
        monkeypatch.setenv(name, value)
    return load_settings(root)
