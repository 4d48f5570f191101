"""The output layer: every output of a command is checked before any is written; each is written whole, with the umask's
permissions; companion files (PNGs, PDF) follow the same rule (issue 13)."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xlplan.cli import main
from xlplan.io.outputs import Output, check_outputs, new_file_mode, write_outputs

T0 = 1_767_225_600  # 2026-01-01 00:00:00 UTC


def cli(capsys, *args) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def small_log(folder: Path) -> Path:
    # 2,000 requests over a day: enough for a forecast
    rng = np.random.default_rng(0)
    path = folder / "log.csv"
    pd.DataFrame({"created": T0 + np.sort(rng.uniform(0, 86_400, 2000)).astype(int), "prompt_tokens": 1000,
                  "completion_tokens": 100}).to_csv(path, index=False)
    return path


def test_plan_writes_nothing_when_one_output_cannot_be_written(tmp_path, capsys):
    rc, err = cli(capsys, "plan", "--markdown", tmp_path / "ok.md", "--workbook", tmp_path / "nodir" / "x.xlsx")
    assert rc == 2 and "folder" in err and "nodir" in err and "does not exist" in err
    assert listing(tmp_path) == []


def test_every_problem_is_reported_and_nothing_written(tmp_path, capsys):
    (tmp_path / "taken.md").write_text("mine", encoding="utf-8")
    rc, err = cli(capsys, "plan", "--markdown", tmp_path / "taken.md", "--workbook", tmp_path / "x.xls")
    assert rc == 2 and "3 problem(s)" in err  # a problem with each output, then 'nothing was written'
    assert "already exists" in err and "must end in .xlsx" in err and "nothing was written" in err
    assert listing(tmp_path) == ["taken.md"] and (tmp_path / "taken.md").read_text() == "mine"


@pytest.mark.slow
def test_template_refuses_another_files_name_and_an_existing_file(tmp_path, capsys):
    existing = tmp_path / "existing.yaml"
    existing.write_text("forecast: {}\n", encoding="utf-8")
    rc, err = cli(capsys, "template", "-o", existing)
    assert rc == 2 and "must end in .xlsx" in err and existing.read_text() == "forecast: {}\n"
    book = tmp_path / "book.xlsx"
    book.write_bytes(b"the user's own work")
    rc, err = cli(capsys, "template", "-o", book)
    assert rc == 2 and "already exists" in err and book.read_bytes() == b"the user's own work"
    assert main(["template", "-o", str(book), "--force"]) == 0 and zipfile.is_zipfile(book)


@pytest.mark.slow
def test_traffic_refuses_to_overwrite_its_pictures(tmp_path, capsys):
    log = small_log(tmp_path)
    picture = tmp_path / "fc-rate.png"
    picture.write_bytes(b"a picture of mine")
    rc, err = cli(capsys, "traffic", log, "-o", tmp_path / "fc.yaml")
    assert rc == 2 and "fc-rate.png" in err and "already exists" in err
    assert listing(tmp_path) == ["fc-rate.png", "log.csv"] and picture.read_bytes() == b"a picture of mine"
    assert main(["traffic", str(log), "-o", str(tmp_path / "fc.yaml"), "--force"]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / "fc-lengths.png").exists()


def test_workbook_refuses_an_existing_pdf_before_writing_the_workbook(tmp_path, capsys):
    (tmp_path / "x.pdf").write_bytes(b"%PDF mine")
    rc, err = cli(capsys, "workbook", "-o", tmp_path / "x.xlsx", "--pdf", tmp_path / "x.pdf")
    assert rc == 2 and "x.pdf" in err and "already exists" in err
    assert listing(tmp_path) == ["x.pdf"]


def test_workbook_refuses_a_pdf_that_is_a_folder(tmp_path, capsys):
    (tmp_path / "note.pdf").mkdir()
    rc, err = cli(capsys, "workbook", "-o", tmp_path / "x.xlsx", "--pdf", tmp_path / "note.pdf")
    assert rc == 2 and "note.pdf: --pdf: a folder; expected a file name" in err
    assert len(err.strip().splitlines()) == 1 and listing(tmp_path) == ["note.pdf"]


def test_workbook_pdf_refused_in_one_line_without_libreoffice(tmp_path, capsys, monkeypatch):
    from xlplan.io import libreoffice

    monkeypatch.setattr(libreoffice, "soffice", lambda: None)  # as on a machine without LibreOffice
    rc, err = cli(capsys, "workbook", "-o", tmp_path / "x.xlsx", "--pdf", tmp_path / "x.pdf")
    assert rc == 2 and err.startswith("error: --pdf: needs LibreOffice") and len(err.strip().splitlines()) == 1
    assert listing(tmp_path) == []  # not even the workbook, which needed no LibreOffice


@pytest.mark.parametrize("args, expected", [
    (["example", "-o", "{d}/plan.json"], "must end in .yaml or .yml"),
    (["schema", "-o", "{d}/schema.yaml"], "must end in .json"),
    (["plan", "--markdown", "{d}/note.xlsx"], "must end in .md or .markdown or .txt"),
    (["workbook", "-o", "{d}/book.csv"], "must end in .xlsx"),
    (["read", "{d}/in.xlsx", "-o", "{d}/plan.xlsx"], "must end in .yaml or .yml"),
])
def test_names_must_match_what_is_written(tmp_path, capsys, args, expected):
    rc, err = cli(capsys, *[a.format(d=tmp_path) for a in args])
    assert rc == 2 and expected in err
    assert listing(tmp_path) == []


def test_a_folder_or_a_file_in_the_way(tmp_path, capsys):
    (tmp_path / "plan.yaml").mkdir()
    rc, err = cli(capsys, "example", "-o", tmp_path / "plan.yaml", "--force")
    assert rc == 2 and "a folder; expected a file name" in err
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    rc, err = cli(capsys, "example", "-o", tmp_path / "afile" / "plan.yaml")
    assert rc == 2 and "is a file, not a folder" in err


def test_two_outputs_never_the_same_file_and_an_input_never_an_output(tmp_path, capsys):
    rc, err = cli(capsys, "plan", "--markdown", tmp_path / "a.md", "--workbook", tmp_path / "sub" / ".." / "a.md")
    assert rc == 2 and "the same file as --markdown" in err
    plan = tmp_path / "p.yaml"
    assert main(["example", "-o", str(plan)]) == 0
    before = plan.read_bytes()
    rc, err = cli(capsys, "plan", plan, "--markdown", plan, "--force")
    assert rc == 2 and "is also an input of this command" in err and plan.read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_files_get_the_umasks_permissions(tmp_path, capsys, mask):
    # a new file is created 0666 less the umask: 0644 under 022, 0600 under 077, 0664 under 002
    old = os.umask(mask)
    try:
        assert new_file_mode() == 0o666 & ~mask
        assert main(["example", "-o", str(tmp_path / "plan.yaml")]) == 0
        assert main(["plan", "--markdown", str(tmp_path / "note.md"), "--workbook", str(tmp_path / "x.xlsx")]) == 0
    finally:
        os.umask(old)
    for name in ("plan.yaml", "note.md", "x.xlsx"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask, name


def test_an_overwritten_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("old", encoding="utf-8")
    path.chmod(0o640)
    check_outputs([Output(path, "-o")], force=True)
    write_outputs([(path, "new")])
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["plan.yaml"]  # no temporary file left


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    # the disk fills while the second of two files is written: no file appears, no temporary file is left
    import xlplan.io.outputs as outputs

    real_fsync, calls = outputs.os.fsync, []

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(outputs.os, "fsync", full_disk)
    from xlplan.io.errors import InputError

    with pytest.raises(InputError, match="No space left on device"):
        write_outputs([(tmp_path / "a.md", "a"), (tmp_path / "b.md", "b")])
    assert listing(tmp_path) == []


def test_a_folder_as_an_output_is_named_a_folder_with_a_file_name_to_use(tmp_path, capsys):
    # once "got a name ending in 'no suffix'": the folder is named as one, with a file name inside it to write instead
    rc, err = cli(capsys, "workbook", "-o", str(tmp_path))
    assert rc == 2 and f"-o: a folder; expected a file name, e.g. '{tmp_path / (tmp_path.name + '.xlsx')}'" in err
