"""Validation against published measurements (shared/reference/measurements-public.csv, copied to tests/data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlplan.cli import main
from xlplan.io.errors import InputError
from xlplan.io.measurements import medians, read_measurements, validate

PUBLIC = Path(__file__).parent / "data" / "measurements-public.csv"


@pytest.fixture(scope="module")
def checks():
    return validate(read_measurements(PUBLIC))


def test_kv_capacity_within_3_percent_on_every_row(checks):
    # K01: 0.9 × 79.18 − 14.96 (8.03e9 × 2 B) − 4.89 logged = 51.41 vs 51.38 GiB; K09 also in tokens:
    # 28.2 GiB × 2^30 ÷ 163,840 B/token = 184,812 vs 184,832 logged (block-rounded)
    kv = [c for c in checks if c.category == "kv_capacity"]
    assert {c.id for c in kv} == {"K01", "K04", "K06", "K09"}
    assert all(abs(c.relative_error) < 0.03 for c in kv), [(c.id, c.metric, c.relative_error) for c in kv]


def test_throughput_and_latency_medians_under_25_percent_with_default_efficiencies(checks):
    med = medians(checks)
    assert med["throughput"] < 0.25 and med["latency"] < 0.25
    # N01, a single 5,000-token conversation on TP-2 H100s: 35.3 GB of weights and 0.43 GB of fp8 cache per GPU read per
    # step at 3.35 TB/s × 0.60 = 18.3 ms against the 18.58 ms measured
    n01 = next(c for c in checks if c.id == "N01" and c.kind == "latency")
    assert n01.predicted == pytest.approx(18.3, abs=0.1) and abs(n01.relative_error) < 0.03


def test_rows_the_file_does_not_pin_down_are_skipped_with_the_reason(checks):
    skipped = {c.id: c.skipped for c in checks if c.skipped}
    assert set(skipped) == {"M01", "M02"}
    assert all("not stated" in why for why in skipped.values())


def test_unknown_model_or_gpu_is_skipped_not_guessed(tmp_path):
    import pandas as pd

    rows = pd.read_csv(PUBLIC)
    rows.loc[rows.id == "G03", "model"] = "acme/Unknown-13B"
    rows.loc[rows.id == "N01", "gpu"] = "Gaudi 3"
    path = tmp_path / "m.csv"
    rows.to_csv(path, index=False)
    skipped = {c.id: c.skipped for c in validate(read_measurements(path)) if c.skipped}
    assert skipped["G03"] == "model 'acme/Unknown-13B' is not in the catalog"
    assert skipped["N01"] == "GPU 'Gaudi 3' is not in the catalog"


def test_command_json(capsys):
    assert main(["validate", str(PUBLIC), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["efficiencies"] == {"prefill_mfu": 0.4, "decode_mfu": 0.4, "bandwidth_efficiency": 0.6}
    assert out["median_absolute_error"]["capacity"] < 0.03


def test_bad_files(tmp_path, capsys):
    missing = tmp_path / "cols.csv"
    missing.write_text("id,category,model\nK01,kv_capacity,x\n")
    with pytest.raises(InputError, match="missing column\\(s\\) precision, gpu"):
        read_measurements(missing)
    other = tmp_path / "result.json"
    other.write_text(json.dumps({"output_throughput": 1000.0}))
    assert main(["validate", str(other)]) == 2
    assert "expected" in capsys.readouterr().err
