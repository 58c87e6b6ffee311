"""The suite without TensorFlow: one skip, the `tf` marker's (tests/conftest.py), and no
measurement started at collection."""

import re
from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest

TESTS = Path(__file__).parent


def item(*markers: str, fixtures: tuple[str, ...] = ("tf_records",)) -> SimpleNamespace:
    """A collected test with these markers and fixtures: what the hooks read of it."""
    added: list = []
    return SimpleNamespace(
        added=added,
        fixturenames=list(fixtures),
        get_closest_marker=lambda name: name if name in markers or name in added else None,
        add_marker=lambda mark: added.append(mark),
    )


def test_without_tensorflow_only_the_tests_marked_tf_are_skipped(monkeypatch):
    monkeypatch.setattr(conftest, "HAS_TF", False)
    tf, plain = item("tf"), item("timeout")
    conftest.pytest_collection_modifyitems(None, [tf, plain])
    (skip,) = tf.added
    assert skip.name == "skip" and skip.kwargs["reason"] == conftest.NO_TF_REASON
    assert plain.added == []


def test_with_tensorflow_nothing_is_skipped_and_the_tests_that_wait_for_records_go_last(
    monkeypatch,
):
    monkeypatch.setattr(conftest, "HAS_TF", True)
    first, second = item("tf"), item("tf")
    own_children, plain = item("tf", fixtures=("tmp_path",)), item(fixtures=())
    items = [first, own_children, second, plain]
    conftest.pytest_collection_modifyitems(None, items)
    assert all(test.added == [] for test in items)
    assert items == [own_children, plain, first, second]


def test_without_tensorflow_no_measurement_starts_at_collection(monkeypatch):
    """The session's TensorFlow children (tf_records) start only where TensorFlow is: none would
    fail, or keep a test waiting, without it."""
    monkeypatch.setattr(conftest, "HAS_TF", False)
    monkeypatch.setattr(conftest, "_TF_SESSION", None)
    monkeypatch.setattr(
        conftest.subprocess, "Popen", lambda *a, **k: pytest.fail("a process was started")
    )
    config = SimpleNamespace(option=SimpleNamespace(collectonly=False))
    conftest.pytest_collection_finish(SimpleNamespace(config=config, items=[item("tf")]))
    assert conftest._TF_SESSION is None


def test_no_test_skips_on_tensorflow_by_itself():
    """importorskip, or a skipif on find_spec: a second mechanism, which `-m "not tf"` would
    not deselect. A test that needs TensorFlow is marked `tf`."""
    own = re.compile(r"importorskip\(\s*[\"']tensorflow|find_spec\(\s*[\"']tensorflow")
    found = [
        f"{path.name}:{n}"
        for path in sorted(TESTS.glob("*.py"))
        if path.name not in ("conftest.py", Path(__file__).name)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if own.search(line)
    ]
    assert found == []
