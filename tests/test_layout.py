"""The contributor's map stays true: the README's Layout is what the tree says, and CONTRIBUTING.md names real files."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATH_LIKE = re.compile(r"^[\w.\-/*]+$")  # a token that can be a path: no spaces, brackets, quotes or units
FILE_SUFFIXES = (".py", ".yaml", ".xlsx", ".json", ".csv")


def _layout_script():
    spec = importlib.util.spec_from_file_location("layout_script", ROOT / "scripts" / "layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_readme_layout_is_what_the_tree_generates():
    layout = _layout_script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert layout.readme_section(readme) == layout.generate(), \
        "README.md's Layout section is stale: run python scripts/layout.py --write"


@pytest.mark.slow
def test_layout_lists_every_module_once_and_no_build_output():
    layout = _layout_script()
    body = layout.generate()
    paths = re.findall(r"^\s*- `([^`]+)` — ", body, flags=re.MULTILINE)
    assert len(paths) == len(set(paths))
    assert paths == [p for p in paths if not re.search(r"__pycache__|\.venv|egg-info|(^|/)build/", p)]
    # every Python module of the tracked packages appears (an empty package marker, xlplan/data/__init__.py, aside)
    for folder in ("xlplan", "udfs", "tests", "benchmarks", "scripts"):
        for p in (ROOT / folder).rglob("*.py"):
            rel = p.relative_to(ROOT).as_posix()
            if "__pycache__" in rel or p.name == "__init__.py":
                continue
            assert rel in paths, f"{rel} is missing from the Layout"


def test_write_replaces_only_the_text_between_the_markers():
    layout = _layout_script()
    text = f"intro\n## Layout\n\nsentence\n\n{layout.START}\nold line\n{layout.END}\n\n## After\n"
    new = layout.write(text, "- `x/` — new\n")
    assert new == f"intro\n## Layout\n\nsentence\n\n{layout.START}\n- `x/` — new\n{layout.END}\n\n## After\n"
    assert layout.readme_section(new) == "- `x/` — new\n"
    with pytest.raises(layout.LayoutError, match="markers"):
        layout.readme_section("no markers here")


def test_a_module_without_a_docstring_is_an_error(tmp_path, monkeypatch):
    layout = _layout_script()
    pkg = tmp_path / "xlplan"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""The package."""\n', encoding="utf-8")
    (pkg / "good.py").write_text('"""Good: a summary\nthat wraps."""\n', encoding="utf-8")
    (pkg / "bad.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr(layout, "ROOT", tmp_path)
    monkeypatch.setattr(layout, "TOP", ("xlplan",))
    with pytest.raises(layout.LayoutError, match=r"xlplan/bad\.py has no module docstring"):
        layout.generate()
    (pkg / "bad.py").write_text('"""Now documented; ``code`` and :func:`~a.b.c`."""\n', encoding="utf-8")
    assert layout.generate() == ("- `xlplan/` — The package.\n"
                                 "  - `xlplan/bad.py` — Now documented; `code` and `c`.\n"
                                 "  - `xlplan/good.py` — Good: a summary that wraps.\n")


def _mentioned_paths(text: str) -> list[str]:
    """Every token inside backticks that looks like a repository path: contains a / or ends in a file suffix."""
    found = []
    for span in re.findall(r"`([^`\n]+)`", text):
        for token in span.split():
            token = token.split("::", 1)[0]
            if PATH_LIKE.match(token) and ("/" in token or token.endswith(FILE_SUFFIXES)) and "://" not in token:
                found.append(token)
    return found


def test_contributing_names_only_files_that_exist():
    path = ROOT / "CONTRIBUTING.md"
    assert path.is_file(), "CONTRIBUTING.md is missing"
    text = path.read_text(encoding="utf-8")
    mentioned = []
    for line in text.splitlines():
        # a row of the package map names its files relative to its package's folder
        row = re.match(r"^\| `(xlplan[\w/]*?)/?` \|", line)
        folder = row[1] + "/" if row else ""
        mentioned += [p if p.startswith(("xlplan/", "tests/", "scripts/", "udfs/", "docs/")) else folder + p
                      for p in _mentioned_paths(line)]
    assert len(mentioned) > 40  # the map names its files
    missing = sorted({p for p in mentioned if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())})
    assert missing == [], f"CONTRIBUTING.md names paths that do not exist: {missing}"


def test_contributing_names_only_tests_that_exist():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert named
    missing = [f"{f}::{t}" for f, t in named if not re.search(rf"^def {t}\(", (ROOT / f).read_text(encoding="utf-8"), re.MULTILINE)]
    assert missing == [], f"CONTRIBUTING.md names tests that do not exist: {missing}"
    # a test named bare (`test_x`, after its file) is defined in some test file
    defined = {m for f in (ROOT / "tests").glob("test_*.py") for m in re.findall(r"^def (test_\w+)\(", f.read_text(encoding="utf-8"), re.MULTILINE)}
    bare = set(re.findall(r"`(test_\w+)`", text))
    assert bare - defined == set(), f"CONTRIBUTING.md names tests that do not exist: {sorted(bare - defined)}"


def test_the_path_finder_itself():
    text = "see `xlplan/io/files.py`, `pytest -q -m \"not slow\"`, `[requests/s]`, `tests/test_x.py::test_y` and `gpus.yaml`"
    assert _mentioned_paths(text) == ["xlplan/io/files.py", "tests/test_x.py", "gpus.yaml"]
