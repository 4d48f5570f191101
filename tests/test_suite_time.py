"""scripts/suite_time.py writes the README's suite counts and times: its sentences, and the markers it writes between."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "suite_time.py"


def _script():
    spec = importlib.util.spec_from_file_location("suite_time", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fast_sentence_says_the_count_the_cpu_and_the_budget():
    s = _script().fast_sentence({"passed": 2305, "cpu_s": 42.4, "wall_s": 43.0})
    assert s.startswith("2,305 tests, 42 CPU-seconds in one process (within the 60 s budget; 43 s wall)")
    assert "over the 60 s budget" in _script().fast_sentence({"passed": 1, "cpu_s": 61.0, "wall_s": 61.0})


def test_the_full_sentence_says_minutes_and_seconds():
    # 412 s = 6 min 52 s
    assert _script().full_sentence({"passed": 2559, "cpu_s": 0.0, "wall_s": 412.4}).startswith("2,559 tests in 6 min 52 s")


def test_it_writes_between_its_markers_and_nowhere_else(tmp_path, monkeypatch):
    m = _script()
    readme = tmp_path / "README.md"
    readme.write_text("a <!-- fast-set:start -->old<!-- fast-set:end --> b\n", encoding="utf-8")
    monkeypatch.setattr(m, "README", readme)
    m.write("fast-set", "new")
    assert readme.read_text(encoding="utf-8") == "a <!-- fast-set:start -->new<!-- fast-set:end --> b\n"
    with pytest.raises(SystemExit):
        m.write("full-suite", "x")


def test_the_readme_has_both_markers():
    text = (SCRIPT.parents[1] / "README.md").read_text(encoding="utf-8")
    assert all(f"<!-- {k}:{e} -->" in text for k in ("fast-set", "full-suite") for e in ("start", "end"))
