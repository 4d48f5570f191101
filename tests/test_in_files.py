"""The input layer: every file a user hands the tool, each class of problem refused in one line naming the file and
the field, line or cell, with exit status 2 and no traceback (issue 13)."""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from xlplan.cli import main
from xlplan.io import files
from xlplan.io.errors import InputError
from xlplan.io.planfile import reference_plan, reference_plan_text

GOOD = yaml.safe_load(reference_plan_text())
LLAMA_8B = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256,
            "tie_word_embeddings": False, "max_position_embeddings": 131072}


def cli(capsys, *args) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def plan_text(**forecast) -> str:
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    data["forecast"] = {**data["forecast"], **forecast}
    return yaml.safe_dump(data)


# --- paths: a folder, a pipe, a missing file ----------------------------------------------------------------------------

READERS = [
    ("plan", ["plan", "{x}"]),
    ("capacity", ["capacity", "{x}", "--gpus", "4"]),
    ("read", ["read", "{x}"]),
    ("check", ["check", "{x}"]),
    ("calibrate", ["calibrate", "{x}"]),
    ("confirm", ["confirm", "{x}", "{x}"]),
    ("traffic", ["traffic", "{x}"]),
    ("plan --plan of calibrate", ["calibrate", "{x}", "--plan", "{x}"]),
]


@pytest.mark.parametrize("name, args", READERS, ids=[r[0] for r in READERS])
def test_a_folder_where_a_file_is_expected(tmp_path, capsys, name, args):
    folder = tmp_path / "a-folder.yaml"
    folder.mkdir()
    rc, err = cli(capsys, *[a.format(x=folder) for a in args])
    assert rc == 2 and f"{folder}: a folder; expected" in err


@pytest.mark.parametrize("name, args", READERS, ids=[r[0] for r in READERS])
def test_a_missing_file(tmp_path, capsys, name, args):
    rc, err = cli(capsys, *[a.format(x=tmp_path / "nope.json") for a in args])
    assert rc == 2 and "file not found" in err


def test_a_named_pipe_is_refused_not_read(tmp_path, capsys):
    # reading a FIFO with no writer would block for ever
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    rc, err = cli(capsys, "plan", fifo)
    assert rc == 2 and "not a regular file" in err


def test_model_config_that_is_a_folder_names_the_field(tmp_path, capsys):
    (tmp_path / "cfg").mkdir()
    data = {**GOOD, "model": {"config": "cfg"}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    rc, err = cli(capsys, "plan", tmp_path / "plan.yaml")
    assert rc == 2 and "model.config:" in err and "cfg: a folder; expected a file: a Hugging Face config.json" in err


def test_a_file_over_the_size_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(files, "TEXT_MAX_BYTES", 100)
    path = tmp_path / "plan.yaml"
    path.write_text(reference_plan_text(), encoding="utf-8")  # ~1.5 KB
    rc, err = cli(capsys, "plan", path)
    assert rc == 2 and "expected a plan file (YAML or JSON): try `xlplan example` of at most 100 bytes" in err


def test_not_utf8_is_named_with_line_and_column(tmp_path, capsys):
    path = tmp_path / "plan.yaml"
    lines = reference_plan_text().splitlines(keepends=True)
    lines[3] = "name: Caf\xe9 plan\n"  # line 4; 'é' written in Latin-1 is byte 0xe9, the 9th byte of the line
    path.write_bytes("".join(lines).encode("latin-1"))
    rc, err = cli(capsys, "plan", path)
    assert rc == 2 and "line 4, column 10: byte 0xe9 is not UTF-8 text" in err


def test_a_binary_file(tmp_path, capsys):
    path = tmp_path / "plan.yaml"
    path.write_bytes(b"forecast:\n\x00\x01\x02")
    rc, err = cli(capsys, "plan", path)
    assert rc == 2 and "line 2: a NUL byte" in err


def test_a_gz_bomb_is_refused_at_the_cap(tmp_path):
    # 64 MiB of zeros gzip to ~64 KiB; read with a cap of 1 MiB, it stops after the cap
    path = tmp_path / "bomb.txt.gz"
    with gzip.open(path, "wb") as f:
        for _ in range(64):
            f.write(b"\0" * files.MIB)
    with pytest.raises(InputError, match="inflates beyond 1.0 MiB.*decompression bomb"):
        files.read_bytes(path, "a text", files.MIB)


def test_a_truncated_gz_is_named(tmp_path):
    path = tmp_path / "plan.yaml.gz"
    path.write_bytes(gzip.compress(reference_plan_text().encode())[:-40])
    with pytest.raises(InputError, match="damaged or truncated .gz"):
        files.read_text(path, "a plan", files.MIB)


# --- YAML that means something else ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    # an alias bomb: nine levels of nine aliases would expand to 9^9 = 387 million strings; refused at the first alias,
    # line 2 "b: &b [*a, ...": the '*' is the 8th character
    ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
                                                    for p, c in zip("abcdefgh", "bcdefghi")), "line 2, column 8: alias *a"),
    ("base: &b {peak_rps: 40}\nforecast:\n  <<: *b\n", "alias *b"),
    ("forecast: {peak_rps: 40}\nforecast: {peak_rps: 80}\n", "line 2, column 1: key 'forecast' appears twice in one mapping (first on line 1)"),
    ("forecast: !!python/object:os.system {}\n", "YAML tag"),
    ("? [a, b]\n: 1\n", "is not text; expected field names"),
    ("[" * 3000 + "]" * 3000, "nested too deeply"),
])
def test_yaml_refusals(tmp_path, capsys, text, expected):
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    rc, err = cli(capsys, "plan", path)
    assert rc == 2 and expected in err


@pytest.mark.parametrize("value, expected", [
    ("true", "forecast.peak_rps: got true; expected a number"),  # not 1 req/s
    ("false", "forecast.peak_rps: got false; expected a number"),
    (".inf", "forecast.peak_rps: got inf; expected a finite number"),  # not blamed on the inter-token target
    ("-.inf", "forecast.peak_rps: got -inf; expected a finite number"),
    (".nan", "forecast.peak_rps: got nan; expected a finite number"),
    ("'inf'", "forecast.peak_rps: got inf; expected a finite number"),
    ("1e300", "forecast.peak_rps: got 1e+300; expected a number no larger than 1e+15"),
    ("1" + "0" * 400, "forecast.peak_rps: got a number of 401 digits"),
    ("yes", "forecast.peak_rps: got 'yes'"),  # YAML 1.1 read yes as true; here it is text, refused as a number
    ("1:30", "forecast.peak_rps: got '1:30'"),  # YAML 1.1 read 1:30 as 90 (base 60)
])
def test_numbers_that_mean_something_else_blame_their_field(tmp_path, capsys, value, expected):
    path = tmp_path / "plan.yaml"
    path.write_text(plan_text().replace("peak_rps: 40", f"peak_rps: {value}"), encoding="utf-8")
    assert f"peak_rps: {value}" in path.read_text()
    rc, err = cli(capsys, "plan", path)
    assert rc == 2 and expected in err


@pytest.mark.slow
def test_octal_looking_and_exponent_numbers_read_as_written(tmp_path, capsys):
    # 040 is forty (YAML 1.1 read it as octal 32); 4e1 is forty too (YAML 1.1 read it as text)
    for value in ("040", "4e1", "4.0e+1"):
        path = tmp_path / "plan.yaml"
        path.write_text(plan_text().replace("peak_rps: 40", f"peak_rps: {value}"), encoding="utf-8")
        assert main(["plan", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["runbook_method"]["fleet"]["load"] == 4  # the runbook's 4 GPUs at 40 req/s


@pytest.mark.parametrize("mfu, hint", [(1.2, None), (150, None), (40, "(write 0.40, not 40)"), (12.5, "(write 0.125, not 12.5)")])
def test_a_percentage_hint_only_where_the_value_reads_as_a_percentage(tmp_path, capsys, mfu, hint):
    data = {**GOOD, "policy": {**GOOD["policy"], "mfu": mfu}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    rc, err = cli(capsys, "plan", path)
    assert rc == 2 and f"policy.mfu: got {mfu}" in err
    assert (hint in err) if hint else ("write" not in err)


# --- JSON: config.json --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"model_type": "llama", "hidden_size": 4096, "hidden_size": 8192}', "key 'hidden_size' appears twice"),
    (json.dumps(LLAMA_8B)[:-1] + ', "rope_theta": NaN}', "rope_theta: got nan; expected a finite number"),
    (json.dumps({**LLAMA_8B, "num_attention_heads": 0}), "num_attention_heads: got 0; expected a whole number of at least 1"),
    (json.dumps({**LLAMA_8B, "num_hidden_layers": "32"}), "num_hidden_layers: got '32'; expected a whole number"),
    (json.dumps({**LLAMA_8B, "vocab_size": True}), "vocab_size: got True; expected a whole number"),
    (json.dumps({**LLAMA_8B, "tie_word_embeddings": "false"}), "tie_word_embeddings: got 'false'; expected true or false"),
    (json.dumps({k: v for k, v in LLAMA_8B.items() if k != "hidden_size"}), "hidden_size: missing"),
    ("[1, 2]", "expected a JSON object"),
    ('{"model_type": "llama",', "line 1, column 24: not JSON"),
])
def test_config_json_refusals_name_the_field(tmp_path, capsys, text, expected):
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump({**GOOD, "model": {"config": "config.json"}}), encoding="utf-8")
    rc, err = cli(capsys, "plan", tmp_path / "plan.yaml")
    assert rc == 2 and "model.config:" in err and expected in err


# --- workbooks: bombs and cells ---------------------------------------------------------------------------------------

def _workbook(tmp_path) -> Path:
    from workbookhelp import workbook_for_plan

    path = tmp_path / "plan.xlsx"
    path.write_bytes(workbook_for_plan(reference_plan()))
    return path


def _replace_part(path: Path, name: str, writer) -> None:
    src = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == name:
                part = zipfile.ZipInfo(name, date_time=info.date_time)
                part.compress_type = zipfile.ZIP_DEFLATED
                with dst.open(part, "w", force_zip64=True) as out:
                    writer(out)
            else:
                dst.writestr(info, src.read(info.filename))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["read", "check"])
def test_a_sheet_that_inflates_past_the_limit_is_refused_before_parsing(tmp_path, capsys, command):
    # 20 MiB of spaces in the first sheet's XML (deflated to ~20 KiB), above the 16 MiB a part may inflate to
    path = _workbook(tmp_path)
    assert files.ZipLimits().max_member_bytes == 16 * files.MIB
    _replace_part(path, "xl/worksheets/sheet1.xml", lambda out: [out.write(b" " * files.MIB) for _ in range(20)])
    assert path.stat().st_size < files.MIB
    before = path.read_bytes()
    rc, err = cli(capsys, command, path)
    assert rc == 2 and "part 'xl/worksheets/sheet1.xml'" in err and "decompression bomb" in err
    assert path.read_bytes() == before


def test_a_part_whose_header_understates_its_size_is_damaged(tmp_path, capsys):
    # the headers say 100 bytes; the data inflates to 1 MiB: reading stops at 100 bytes, and the CRC of 1 MiB fails
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/worksheets/sheet1.xml", b" " * files.MIB)
    lie = bytearray(raw.getvalue())
    cd = lie.rindex(b"PK\x01\x02")
    lie[cd + 24:cd + 28] = (100).to_bytes(4, "little")  # central directory entry: uncompressed size
    lie[22:26] = (100).to_bytes(4, "little")  # local file header: uncompressed size
    bad = tmp_path / "lie.xlsx"
    bad.write_bytes(bytes(lie))
    rc, err = cli(capsys, "read", bad)
    assert rc == 2 and "part 'xl/worksheets/sheet1.xml' is damaged or encrypted (BadZipFile: Bad CRC-32" in err


@pytest.mark.slow
def test_a_number_cell_that_overflows_names_the_cell(tmp_path, capsys):
    import openpyxl

    path = _workbook(tmp_path)
    wb = openpyxl.load_workbook(path)
    (title, ref), = wb.defined_names["PeakRate"].destinations
    wb[title][ref.replace("$", "")].value = 1e300
    wb.save(path)
    rc, err = cli(capsys, "read", path)
    assert rc == 2 and f"'{title}'!{ref.replace('$', '')} (PeakRate, Peak arrival rate): got 1e+300" in err


@pytest.mark.slow
def test_a_defined_name_on_a_range_is_refused(tmp_path, capsys):
    import openpyxl

    path = _workbook(tmp_path)
    wb = openpyxl.load_workbook(path)
    wb.defined_names["PeakRate"].attr_text = "'1 Inputs'!$B$5:$C$9"
    wb.save(path)
    rc, err = cli(capsys, "read", path)
    assert rc == 2 and "defined name 'PeakRate'" in err and "expected a single cell" in err


# --- extras, version --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("module, args, extra", [
    ("pandas", ["traffic", "log.csv"], "logs"),
    ("matplotlib", ["traffic", "log.csv"], "logs"),
    ("prometheus_client", ["confirm", "a.txt", "b.txt"], "metrics"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, capsys, monkeypatch, module, args, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import of it now fails as if it were not installed
    monkeypatch.chdir(tmp_path)
    for name in ("log.csv", "a.txt", "b.txt"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    rc, err = cli(capsys, *args)
    assert rc == 2 and err.count("\n") == 1 and f"pip install 'xlplan[{extra}]'" in err and module in err


def test_a_missing_extra_found_only_at_import_is_named_too(capsys, monkeypatch):
    from xlplan.io.extras import missing_extra

    e = ModuleNotFoundError("No module named 'pandas'", name="pandas")
    assert "pip install 'xlplan[logs]'" in missing_extra(e, "validate").problems[0]
    assert missing_extra(ModuleNotFoundError("x", name="no_such_module")) is None  # anything else stays a bug


def test_version(capsys):
    import xlplan

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"xlplan {xlplan.__version__}"
