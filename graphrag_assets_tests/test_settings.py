from pathlib import Path

import pytest

from graphrag_assets.core.errors import ConfigError
from graphrag_assets.core.settings import load_settings


def write(root: Path, text: str) -> Path:
    (root / "graphrag.yaml").write_text(text, encoding="utf-8")
    return root


def test_defaults_without_file_are_offline(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, environ={})
    assert settings.resolved_method == "nlp"
    assert settings.llm.use_local_embedder
    assert settings.chunking.size == 1200 and settings.chunking.overlap == 100
    assert settings.database_path == tmp_path.resolve() / "data" / "graphrag.duckdb"
    assert settings.extraction.entity_types == ["organization", "person", "geo", "event"]
    assert settings.communities.seed == 0xDEADBEEF
    assert settings.query.local.ranking == "graph" and settings.query.basic.mode == "hybrid"


def test_standard_openai_variables_select_the_standard_method(tmp_path: Path) -> None:
    settings = load_settings(
        tmp_path, environ={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"}
    )
    assert settings.resolved_method == "standard"
    assert settings.llm.api_key == "sk-test"
    assert settings.llm.base_url == "http://127.0.0.1:9/v1"
    assert not settings.llm.use_local_embedder


def test_file_values_and_env_substitution(tmp_path: Path) -> None:
    write(
        tmp_path,
        "method: fast\nllm:\n  chat_model: ${MODEL}\n  api_key: ${KEY:-}\nchunking:\n  size: 300\n  overlap: 30\n",
    )
    settings = load_settings(tmp_path, environ={"MODEL": "llama3"})
    assert settings.llm.chat_model == "llama3"
    assert settings.llm.api_key is None
    assert settings.resolved_method == "fast"
    assert (settings.chunking.size, settings.chunking.overlap) == (300, 30)


def test_file_key_wins_over_environment(tmp_path: Path) -> None:
    write(tmp_path, "llm:\n  base_url: http://file:1/v1\n")
    assert load_settings(tmp_path, environ={"OPENAI_BASE_URL": "http://env:2/v1"}).llm.base_url == "http://file:1/v1"


def test_overrides_apply_on_top_of_the_file(tmp_path: Path) -> None:
    write(tmp_path, "method: standard\n")
    assert load_settings(tmp_path, environ={}, overrides={"method": "nlp"}).resolved_method == "nlp"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("chunking:\n  sise: 3\n", "unknown setting 'chunking.sise'; did you mean 'size'?"),
        ("chunking:\n  size: -3\n", "'chunking.size': Input should be greater than or equal to 16"),
        ("chunking: [\n", "graphrag.yaml is not valid YAML at line 2"),
        ("llm:\n  base_url: localhost:8000\n", "'llm.base_url': must start with http:// or https://"),
        ("llm:\n  api_key: ${NOPE}\n", "'llm.api_key' refers to ${NOPE}, which is not set"),
        ("query:\n  global:\n    community_level: -1\n", "'query.global.community_level'"),
        ("query:\n  local:\n    ranking: pagerank\n", "'query.local.ranking': Input should be 'graph' or 'msgraphrag'"),
        ("query:\n  basic:\n    mode: bm25\n", "'query.basic.mode': Input should be 'hybrid' or 'vector'"),
        ("chunking:\n  size: 100\n  overlap: 200\n", "overlap (200) must be smaller than size (100)"),
        ("- a\n", "must hold a mapping"),
        ("input:\n  file_types: [.pdf]\n", "unsupported file type(s) ['.pdf']"),
        ("method: turbo\n", "'method'"),
    ],
)
def test_bad_settings_give_one_clear_sentence(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={})
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message and "Traceback" not in message


def test_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nowhere", environ={})


def test_init_template_is_valid(tmp_path: Path) -> None:
    from graphrag_assets.project.init_files import write_project_files

    write_project_files(tmp_path)
    settings = load_settings(tmp_path, environ={})
    assert settings.method == "auto" and settings.llm.concurrency == 25


def test_root_templates_match_the_packaged_ones() -> None:
    from graphrag_assets.project.init_files import template_text

    repo = Path(__file__).resolve().parents[1]
    for name in ("dagster.yaml", "workspace.yaml"):
        assert (repo / name).read_text(encoding="utf-8") == template_text(name), name


def test_an_invalid_api_key_value_is_never_echoed(tmp_path: Path) -> None:
    write(tmp_path, "llm:\n  api_key: [not, a, string]\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={})
    assert "llm.api_key" in str(caught.value) and "not" not in str(caught.value).split("'llm.api_key'")[1]
    write(tmp_path, "llm:\n  api_key: 0x5f3a9c1177e24b08\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, environ={})
    assert "6861968581092068104" not in str(caught.value) and "5f3a9c" not in str(caught.value)


def test_an_unknown_tokenizer_encoding_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "chunking:\n  encoding: cl100k_bsae\n")
    with pytest.raises(
        ConfigError, match=r"'chunking.encoding': unknown tokenizer encoding 'cl100k_bsae'; use one of: cl100k_base, "
    ):
        load_settings(tmp_path, environ={})


def test_the_default_encoding_loads_without_the_network_or_a_notice() -> None:
    """A fresh process counts tokens with cl100k_base from the bundled copy: no download attempt."""
    import subprocess
    import sys

    code = (
        "import socket\n"
        "def refuse(*a, **k): raise AssertionError('network used')\n"
        "socket.socket.connect = refuse\n"
        "from graphrag_assets.core.tokens import count_tokens\n"
        "print(count_tokens('Søren Holm keeps the Kestrel Point light.'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "13" and done.stderr == ""
