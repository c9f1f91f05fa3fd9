"""``prompt-tune`` against the scripted model server: prompts adapted to the sample, graphrag.yaml
pointed at them with its comments kept, and the next index re-asking what they change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.settings import load_settings
from graphrag_assets.prompts.templates import load_prompt


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_prompt_tune_writes_adapted_prompts_and_the_next_index_reasks_what_changed(
    standard_index: Path, graphrag_server, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    shutil.copytree(standard_index, root)
    settings_file = root / "graphrag.yaml"
    settings_file.write_text("# my own comment\n" + settings_file.read_text())
    written = set((root / "graphrag.yaml").read_text().splitlines())

    dry = cli("prompt-tune", "--root", str(root), "--dry-run")
    assert "prompt-tune would make 3 model call(s)" in dry and "nothing written" in dry
    assert not (root / "prompts").exists()

    before = len(graphrag_server.calls("chat"))
    output = cli("prompt-tune", "--root", str(root), "--language", "English")
    assert len(graphrag_server.calls("chat")) - before == 3 <= 20
    assert (
        "--- built-in extract_graph.txt" in output
        and "entity types: person, organization, geo, event, vessel" in output
    )

    yaml_text = settings_file.read_text()
    assert "# my own comment" in yaml_text and written - set(yaml_text.splitlines()) <= {""}  # nothing lost
    settings = load_settings(root)
    assert settings.extraction.prompt == "prompts/extract_graph.txt"
    assert settings.summarize.prompt == "prompts/summarize_descriptions.txt"
    assert settings.reports.prompt == "prompts/community_report.txt"
    assert settings.extraction.entity_types == ["person", "organization", "geo", "event", "vessel"]
    extract = load_prompt("extract_graph", settings.extraction.prompt, root).text
    assert "a harbour town's affairs" in extract and "Write every description and text in English." in extract
    assert "Amara Osei" not in extract  # the built-in examples are replaced by the user's own text
    assert extract.count("EXAMPLE ") == 2 and '("entity"<|>' in extract

    # the next index re-asks exactly the extraction calls the dry run counts, then summaries and reports
    estimate = json.loads(cli("index", "--root", str(root), "--dry-run", "--json"))
    planned = estimate["per_document_stage"]["extract_graph"]["calls"]
    assert planned > 0 and estimate["changed"]
    before = graphrag_server.calls("chat")
    cli("index", "--root", str(root))
    made = [
        c for c in graphrag_server.calls("chat")[len(before) :] if "knowledge graph from a collection" in str(c["body"])
    ]
    assert len(made) == planned


def test_prompt_tune_needs_a_model(nlp_index: Path) -> None:
    result = CliRunner().invoke(main, ["prompt-tune", "--root", str(nlp_index)], env={"OPENAI_API_KEY": ""})
    assert result.exit_code != 0 and "prompt-tune asks the chat model" in result.output
