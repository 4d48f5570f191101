"""From a request log to the forecast: generated logs with known answers, every format, every class of bad input."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from pytest import approx

from xlplan.cli import main
from xlplan.evidence.traffic import summarise
from xlplan.io.errors import InputError
from xlplan.io.logs import read_logs

T0 = 1_767_225_600  # 2026-01-01 00:00:00 UTC, a Thursday
Z95, Z99 = 1.6448536269514722, 2.3263478740408408


def lognormal_log(n=200_000, median=1500.0, sigma=0.6, out_median=300.0, out_sigma=0.5, seed=0, span_s=86_400):
    rng = np.random.default_rng(seed)
    t = T0 + np.sort(rng.uniform(0, span_s, n))
    return pd.DataFrame({"created": t.astype(np.int64), "prompt_tokens": np.round(rng.lognormal(math.log(median), sigma, n)).astype(int),
                         "completion_tokens": np.round(rng.lognormal(math.log(out_median), out_sigma, n)).astype(int)})


def test_lognormal_percentiles_recovered_within_2_percent(tmp_path):
    # p50 = median; p95 = median · e^{1.645 σ}; p99 = median · e^{2.326 σ} (σ = 0.6: 1,500 / 4,024 / 6,056 tokens)
    path = tmp_path / "log.csv"
    lognormal_log().to_csv(path, index=False)
    r = read_logs([path])
    s = summarise(r.t_s, r.prompt, r.output, r.cached)
    for got, want in ((s.prompt.p50, 1500), (s.prompt.p95, 1500 * math.exp(Z95 * 0.6)), (s.prompt.p99, 1500 * math.exp(Z99 * 0.6)),
                      (s.output.p50, 300), (s.output.p95, 300 * math.exp(Z95 * 0.5)), (s.output.p99, 300 * math.exp(Z99 * 0.5))):
        assert got == approx(want, rel=0.02)


def test_a_burst_in_a_known_minute_is_the_peak_exactly(tmp_path):
    # one request every 2 s for a day (30 a minute), plus 270 more inside minute 600: that minute holds 300 requests,
    # so the peak is 300 / 60 s = 5.0 req/s exactly, and the window starts at T0 + 600 min
    base = T0 + np.arange(0, 86_400, 2.0)
    burst = T0 + 600 * 60 + np.linspace(0.1, 59.9, 270)
    t = np.sort(np.concatenate([base, burst]))
    df = pd.DataFrame({"timestamp": pd.to_datetime(t, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       "prompt_tokens": 1000, "completion_tokens": 200})
    path = tmp_path / "burst.csv"
    df.to_csv(path, index=False)
    r = read_logs([path])
    s = summarise(r.t_s, r.prompt, r.output, window_s=60)
    assert s.peak_rps == 5.0
    assert s.peak_window_start_s == T0 + 600 * 60
    # mean rate: 43,470 requests over 86,398 s; utilisation = mean ÷ 5.0
    assert s.mean_rps == approx(43_470 / 86_398)
    assert s.average_utilisation == approx(43_470 / 86_398 / 5.0)
    assert s.busiest_hour == "Thu 10:00-11:00"  # minute 600 is 10:00 on Thursday 1 January 2026


def test_mean_warning_for_a_skewed_log_only(tmp_path):
    skewed = tmp_path / "skewed.csv"
    lognormal_log(n=50_000, sigma=1.0).to_csv(skewed, index=False)  # mean = p50 · e^{0.5} = 1.65 × p50
    r = read_logs([skewed])
    s = summarise(r.t_s, r.prompt, r.output)
    assert any(w.startswith("prompt mean") and "never the mean" in w for w in s.warnings)
    flat = pd.DataFrame({"created": T0 + np.linspace(0, 86_400, 1000), "prompt_tokens": 2000, "completion_tokens": 300})
    path = tmp_path / "flat.csv"
    flat.to_csv(path, index=False)
    r = read_logs([path])
    assert summarise(r.t_s, r.prompt, r.output).warnings == ()


def _records(df: pd.DataFrame, cached: bool = True) -> list[dict]:
    out = []
    for row in df.itertuples():
        usage = {"prompt_tokens": int(row.prompt_tokens), "completion_tokens": int(row.completion_tokens),
                 "total_tokens": int(row.prompt_tokens + row.completion_tokens)}
        if cached:
            usage["prompt_tokens_details"] = {"cached_tokens": int(row.prompt_tokens) // 4}
        out.append({"id": f"chatcmpl-{row.Index}", "object": "chat.completion", "created": int(row.created), "model": "m", "usage": usage})
    return out


def test_every_log_shape_gives_the_same_forecast(tmp_path):
    df = lognormal_log(n=3000)
    # OpenAI usage records, JSON Lines, gzipped
    with gzip.open(tmp_path / "openai.jsonl.gz", "wt") as f:
        for rec in _records(df):
            f.write(json.dumps(rec) + "\n")
    # LiteLLM spend log export (CSV): startTime in ISO 8601, prompt_tokens, completion_tokens
    lite = pd.DataFrame({"request_id": [f"r{i}" for i in range(len(df))], "call_type": "acompletion",
                         "startTime": pd.to_datetime(df.created, unit="s", utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S+00:00"),
                         "prompt_tokens": df.prompt_tokens, "completion_tokens": df.completion_tokens, "spend": 0.001})
    lite.to_csv(tmp_path / "litellm.csv", index=False)
    # plain CSV with other names, mapped with --columns; and Parquet
    df.rename(columns={"created": "when", "prompt_tokens": "in_tok", "completion_tokens": "out_tok"}).to_csv(tmp_path / "plain.csv.gz", index=False)
    df.to_parquet(tmp_path / "log.parquet")
    results = {
        "openai": read_logs([tmp_path / "openai.jsonl.gz"]),
        "litellm": read_logs([tmp_path / "litellm.csv"]),
        "plain": read_logs([tmp_path / "plain.csv.gz"], {"timestamp": "when", "prompt": "in_tok", "output": "out_tok"}),
        "parquet": read_logs([tmp_path / "log.parquet"]),
    }
    summaries = {k: summarise(r.t_s, r.prompt, r.output, r.cached) for k, r in results.items()}
    first = summaries["parquet"]
    for s in summaries.values():
        assert (s.requests, s.peak_rps, s.prompt, s.output) == (first.requests, first.peak_rps, first.prompt, first.output)
    assert summaries["openai"].prefix_reuse == approx(np.sum(df.prompt_tokens // 4) / np.sum(df.prompt_tokens))
    assert results["openai"].columns[str(tmp_path / "openai.jsonl.gz")]["cached"] == "usage.prompt_tokens_details.cached_tokens"
    assert summaries["litellm"].prefix_reuse is None


def _csv(tmp_path, text, name="bad.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "2026-01-01T00:00:0{i}Z,100,20\n"


@pytest.mark.parametrize("bad_line, reason, shown", [
    ("yesterday,100,20\n", "unparseable timestamp in column 'timestamp'", "line 5, column 'timestamp': 'yesterday'"),
    ("2026-01-01T00:00:05Z,-3,20\n", "negative prompt token count in column 'prompt_tokens'", "line 5, column 'prompt_tokens': -3"),
    ("2026-01-01T00:00:05Z,100,\n", "missing or non-numeric output token count in column 'completion_tokens'", "line 5, column 'completion_tokens'"),
    ("2026-01-01T00:00:05Z,lots,20\n", "missing or non-numeric prompt token count in column 'prompt_tokens'", "line 5, column 'prompt_tokens': 'lots'"),
])
def test_bad_rows_are_counted_reported_and_strict_fails(tmp_path, bad_line, reason, shown):
    # the bad row on line 5, then 200 good rows: one bad row in 204 is under the 1% a log may leave out
    more = "".join(f"2026-01-01T00:{1 + i // 60:02d}:{i % 60:02d}Z,100,20\n" for i in range(200))
    text = "timestamp,prompt_tokens,completion_tokens\n" + "".join(GOOD.format(i=i) for i in range(3)) + bad_line + GOOD.format(i=6) + more
    path = _csv(tmp_path, text)
    r = read_logs([path])
    assert r.t_s.size == 204 and r.bad.counts == {reason: 1}
    # a row whose timestamp reads is still an arrival, whatever its lengths
    assert r.arrival_t_s.size == (204 if "timestamp" in reason else 205)
    assert any(shown in e and str(path) in e for e in r.bad.examples)
    with pytest.raises(InputError) as e:
        read_logs([path], strict=True)
    assert "1 bad row(s) (--strict)" in str(e.value) and shown in str(e.value)


def test_bad_rows_reported_by_the_command(tmp_path, capsys):
    # 200 good rows a second apart (a forecast needs at least 100 spanning a window) after a busier first minute (two a
    # second, so the peak window is there, lines 2-121), one bad row on line 150, outside it
    good = [f"{T0 + i // 2},100,20\n" for i in range(120)] + [f"{T0 + 60 + i},100,20\n" for i in range(200)]
    path = _csv(tmp_path, "timestamp,prompt_tokens,completion_tokens\n" + "".join(good[:148]) + "soon,1,1\n" + "".join(good[148:]))
    assert main(["traffic", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 row(s) left out: unparseable timestamp" in out and "line 150" in out
    assert main(["traffic", str(path), "--strict"]) == 2
    assert "--strict" in capsys.readouterr().err


def test_empty_file(tmp_path):
    with pytest.raises(InputError, match="empty: no requests"):
        read_logs([_csv(tmp_path, "", "empty.jsonl")])
    with pytest.raises(InputError, match="empty: no requests"):
        read_logs([_csv(tmp_path, "timestamp,prompt_tokens,completion_tokens\n", "header-only.csv")])


def test_no_recognisable_columns(tmp_path):
    path = _csv(tmp_path, "when,a,b\n1,2,3\n")
    with pytest.raises(InputError) as e:
        read_logs([path])
    msg = str(e.value)
    assert str(path) in msg and "no recognisable timestamp, prompt, output column (columns: when, a, b)" in msg and "--columns" in msg


def test_mixed_time_zones(tmp_path):
    text = ("timestamp,prompt_tokens,completion_tokens\n2026-01-01T00:00:00+00:00,1,1\n2026-01-01T00:00:01+00:00,1,1\n"
            "2026-01-01T02:00:02+02:00,1,1\n")
    with pytest.raises(InputError) as e:
        read_logs([_csv(tmp_path, text)])
    assert "line 4, column 'timestamp': time zone +02:00 where earlier rows have +00:00" in str(e.value)
    naive = "timestamp,prompt_tokens,completion_tokens\n2026-01-01T00:00:00Z,1,1\n2026-01-01 00:00:01,1,1\n"
    with pytest.raises(InputError, match="line 3, column 'timestamp': time zone no zone where earlier rows have \\+00:00"):
        read_logs([_csv(tmp_path, naive, "naive.csv")])


@pytest.mark.slow
def test_forecast_from_a_log_gives_the_fleet_of_the_same_hand_written_forecast(tmp_path, capsys, ref_plan):
    from planhelp import replan

    from xlplan.decide.planner import plan

    path = tmp_path / "log.csv"
    lognormal_log(n=100_000, span_s=3 * 86_400).to_csv(path, index=False)
    out = tmp_path / "plan.yaml"
    base = tmp_path / "base.yaml"
    from xlplan.io.planfile import reference_plan_text

    base.write_text(reference_plan_text())
    assert main(["traffic", str(path), "--plan", str(base), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Fleet for" in printed and "→" in printed
    derived = yaml.safe_load(out.read_text())
    f = derived["forecast"]
    assert derived["sources"]["forecast"].startswith("derived from log.csv, 2026-01-01 00:00:00+0000")
    assert "100,000 requests, window 60 s" in derived["sources"]["forecast"]
    hand = replan(ref_plan, forecast={"peak_rps": f["peak_rps"], "prompt_tokens": f["prompt_tokens"], "output_tokens": f["output_tokens"],
                                      "average_utilisation": f["average_utilisation"]})
    from xlplan.io.planfile import read_plan

    from_log = plan(read_plan(out))
    assert from_log.fleet == plan(hand).fleet and from_log.binding == plan(hand).binding
    # one figure, one place: the fleet printed is the Answer `xlplan plan --no-verify` gives the derived plan (not the
    # runbook's method), and the outlook's rate is `xlplan capacity --no-verify`'s for that many GPUs
    from xlplan.decide.capacity import closed_form_capacity
    from xlplan.plan.scenario import resolve

    a = from_log.answer
    assert f"→ {a.load}, with redundancy" in printed and "purchased" in printed and f"${a.monthly_usd:,.0f}/month" in printed
    rate = closed_form_capacity(resolve(read_plan(out)), a.load).max_peak_rps
    assert f"carry up to {rate:,.2f} req/s" in printed or f"carries up to {rate:,.2f} req/s" in printed
    assert (tmp_path / "plan-rate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "plan-lengths.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_growth_and_the_date_the_fleet_stops_sufficing(tmp_path):
    # five weeks, each week's traffic 5% above the last: the weekly peaks grow 5% a week
    from xlplan.evidence.traffic_growth import weeks_until
    from xlplan.report.traffic_report import outlook

    rng = np.random.default_rng(3)
    frames = []
    for w in range(5):
        n = int(20_000 * 1.05 ** w)
        t = T0 + w * 7 * 86_400 + np.sort(rng.uniform(0, 7 * 86_400, n))
        frames.append(pd.DataFrame({"created": t, "prompt_tokens": 1000, "completion_tokens": 100}))
    path = tmp_path / "weeks.parquet"
    pd.concat(frames).to_parquet(path)
    r = read_logs([path])
    s = summarise(r.t_s, r.prompt, r.output, window_s=3600)
    assert len(s.weekly_peaks_rps) == 4 and s.weekly_growth == approx(0.05, abs=0.03)
    # capacity twice the peak: ln 2 / ln(1 + g) weeks
    text = outlook(s, weeks_until(2 * s.peak_rps, s.peak_rps, s.weekly_growth), 2 * s.peak_rps, 4)
    weeks = math.log(2) / math.log1p(s.weekly_growth)
    assert f"in {weeks:,.1f} weeks" in text


def test_progress_bar_on_big_logs(tmp_path, monkeypatch, capsys):
    from xlplan.io import logs

    path = tmp_path / "log.csv"
    lognormal_log(n=1000).to_csv(path, index=False)
    monkeypatch.setattr(logs, "PROGRESS_MIN_BYTES", 10)  # this small log counts as big
    read_logs([path])
    assert "reading log.csv" in capsys.readouterr().out
    monkeypatch.setattr(logs, "PROGRESS_MIN_BYTES", 10**12)
    read_logs([path])
    assert "reading" not in capsys.readouterr().out


@pytest.mark.slow
def test_workbook_carries_the_traffic_and_its_provenance(tmp_path, capsys):
    import openpyxl

    path = tmp_path / "log.csv"
    lognormal_log(n=20_000).to_csv(path, index=False)
    xlsx = tmp_path / "plan.xlsx"
    assert main(["traffic", str(path), "--workbook", str(xlsx)]) == 0
    wb = openpyxl.load_workbook(xlsx)
    assert wb.sheetnames[-2:] == ["Traffic data", "Traffic chart"]
    (title, ref), = wb.defined_names["SourceForecast"].destinations
    assert wb[title][ref.replace("$", "")].value.startswith("derived from log.csv")
    capsys.readouterr()
    assert main(["check", str(xlsx)]) == 0


@pytest.mark.slow
def test_window_option(tmp_path, capsys):
    path = tmp_path / "log.csv"
    lognormal_log(n=2000).to_csv(path, index=False)
    assert main(["traffic", str(path), "--window", "5m"]) == 0
    assert "busiest 300 s window" in capsys.readouterr().out
    assert main(["traffic", str(path), "--window", "soon"]) == 2


@pytest.mark.slow
def test_measured_growth_goes_into_the_plan_for_the_schedule(tmp_path):
    # Five weeks each 5% above the last: the plan written by `xlplan traffic --plan` carries growth.monthly, the weekly
    # rate compounded over 365.25 / 12 / 7 weeks a month, which `xlplan schedule` then uses without --growth.
    import yaml

    from xlplan.cli import main
    from xlplan.evidence.traffic import monthly_from_weekly

    rng = np.random.default_rng(3)
    frames = []
    for w in range(5):
        n = int(20_000 * 1.05 ** w)
        t = T0 + w * 7 * 86_400 + np.sort(rng.uniform(0, 7 * 86_400, n))
        frames.append(pd.DataFrame({"created": t, "prompt_tokens": 1000, "completion_tokens": 100}))
    log = tmp_path / "weeks.parquet"
    pd.concat(frames).to_parquet(log)
    base = tmp_path / "base.yaml"
    assert main(["example", "-o", str(base)]) == 0
    out = tmp_path / "plan.yaml"
    assert main(["traffic", str(log), "--window", "1h", "--plan", str(base), "-o", str(out)]) == 0
    data = yaml.safe_load(out.read_text())
    s = summarise(*(lambda r: (r.t_s, r.prompt, r.output))(read_logs([log])), window_s=3600)
    assert data["growth"]["monthly"] == approx(monthly_from_weekly(s.weekly_growth), abs=1e-6)
    assert "measured" in data["growth"]["source"]
    assert main(["schedule", str(out), "--lead-time-days", "30", "--months", "3", "--start", "2027-01", "--json"]) == 0


def test_a_log_under_a_day_keeps_the_plans_utilisation_and_says_so(tmp_path, capsys):
    # 2,000 requests spread evenly over 75 s: the busiest 60 s window holds 60/75 of them (1,600 → 26.7 req/s) and the
    # mean rate is 2,000 / 75 s = 26.7 req/s too, so mean ÷ peak reads ~1.0: the slice is all peak. Written into the
    # forecast it would bill as if the fleet ran flat out all month; the reference plan's own 0.40 must stay
    path = tmp_path / "slice.csv"
    t = T0 + np.linspace(0, 75, 2000)
    pd.DataFrame({"created": t, "prompt_tokens": 1000, "completion_tokens": 200}).to_csv(path, index=False)
    r = read_logs([path])
    s = summarise(r.t_s, r.prompt, r.output, window_s=60)
    assert s.average_utilisation > 0.95 and not s.measures_utilisation
    assert any("under a day" in w and "keeps the plan's average utilisation" in w for w in s.warnings)
    base, out = tmp_path / "base.yaml", tmp_path / "plan.yaml"
    from xlplan.io.planfile import reference_plan_text

    base.write_text(reference_plan_text())
    assert main(["traffic", str(path), "--plan", str(base), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no average utilisation measured (the plan's is kept)" in printed and "warning:" in printed
    from xlplan.io.planfile import read_plan

    assert read_plan(out).forecast.average_utilisation == 0.4  # the reference plan's (runbook: "40% average load")
