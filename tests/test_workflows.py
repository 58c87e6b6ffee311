"""The GitHub Actions workflows are valid workflows: checked against GitHub's workflow schema as
check-jsonschema vendors it (`--builtin-schema vendor.github-workflows`, no network), and they
make the dataset with the command that makes it here (leakbench publish), never another way."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def test_every_workflow_is_valid_under_githubs_schema():
    assert WORKFLOWS, "no workflow found"
    checker = Path(sys.executable).with_name("check-jsonschema")
    done = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflows_measure_through_leakbench_publish():
    """The dataset a workflow makes is the one `leakbench publish` makes: the same command, so
    the nightly's column and the weekly dataset are made as the committed one is."""
    texts = {p.name: p.read_text() for p in WORKFLOWS}
    assert "leakbench publish" in texts["nightly.yml"]
    assert "leakbench publish" in texts["asv.yml"]
    for name, text in texts.items():
        assert "asv-one-version" not in text and "asv run" not in text, name
