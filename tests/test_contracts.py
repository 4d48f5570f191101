"""The contract mix: a reserved base, on-demand for the busy hours, the API for the top of the peak, spot for traffic
without a promise; every expected figure derived by hand from the stated curve and prices."""

import pytest
import yaml

from xlplan.decide.planner import plan
from xlplan.io.planfile import plan_from_mapping, reference_plan_text
from xlplan.money.contracts import savings_figures, size_mix

# 4 h at the peak, 4 h at 0.9375, 8 h at 0.5, 8 h at 0.25
CURVE = [1.0] * 4 + [0.9375] * 4 + [0.5] * 8 + [0.25] * 8


def test_mix_on_a_stated_curve_by_hand():
    # Fleet: load 8 GPUs (tp 1) carrying 8 req/s at the peak, so one replica carries 1 req/s; redundancy 1 GPU.
    # Prices: reserved 2.00, on-demand 4.00 $/GPU-hour; the API 0.00125 $/request = 4.50 $ for one replica's hour of
    # traffic (1 req/s × 3,600 s × 0.00125).
    mix = size_mix(8, 1, 1, CURVE, 2.0, 4.0, 8.0, api_usd_per_request=0.00125)
    # Replicas each hour: ceil(8 × c) = 8, 8 (7.5 rounded up), 4, 2; plus 1 redundancy: 9 (8 h), 5 (8 h), 3 (8 h).
    assert mix.needed == (9,) * 8 + (5,) * 8 + (3,) * 8
    # Base: the quietest hour's 3, then GPUs 4 and 5 are busy 16 h ≥ 2/4 × 24 = 12 h: reserved; GPUs 6-9 busy 8 h < 12.
    assert mix.base_gpus == 5 and mix.base_floor_gpus == 3
    # API ceiling m (load replicas on GPUs), base holds 5 − 1 = 4; a day's on-demand + API cost:
    #   m=8: 8 h × 4 replicas × $4 = $128
    #   m=7: 8 h × 3 × $4 = $96, API 4 h × 1 + 4 h × 0.5 = 6 replica-hours × $4.5 = $27: $123 (least)
    #   m=6: $64 + (4 × 2 + 4 × 1.5 = 14) × 4.5 = $127; m=5: $32 + 22 × 4.5 = $131; m=4: 30 × 4.5 = $135
    assert mix.ceiling_replicas == 7
    assert mix.on_demand_gpu_hours == 24  # 8 h × (8 − 5) GPUs
    assert mix.api_requests == pytest.approx(21_600)  # 6 replica-hours × 3,600 s × 1 req/s
    # GPUs in use: 8 (1 + 7) for 8 h, 5 for 8 h, 3 for 8 h = 64 + 40 + 24 = 128 GPU-hours; the base's share
    # min(n, 5): 40 + 40 + 24 = 104 of 5 × 24 = 120 committed.
    esr, coverage, utilisation = savings_figures(mix, 2.0, 4.0)
    # actual 5 × 24 × $2 + 24 × $4 = $336; the same 128 GPU-hours on demand $512: 1 − 336/512 = 0.34375
    assert esr == pytest.approx(0.34375)
    assert coverage == pytest.approx(104 / 128)  # 0.8125
    assert utilisation == pytest.approx(104 / 120)  # 0.8667


def test_without_overflow_the_peak_stays_on_demand():
    # Same fleet and prices, no API: the ceiling is the whole load (8 replicas) and the 8 busiest hours take 4 on-demand
    # GPUs each (9 − 5): 32 GPU-hours a day.
    mix = size_mix(8, 1, 1, CURVE, 2.0, 4.0, 8.0)
    assert (mix.ceiling_replicas, mix.on_demand_gpu_hours, mix.api_requests) == (8, 32, 0)


@pytest.mark.parametrize("reserved, base", [(3.9, 3), (2.0, 5), (1.0, 9)])
def test_the_base_follows_the_break_even(reserved, base):
    # Curve 8 h at 1.0, 8 h at 0.5, 8 h at 0.25 on 8 load GPUs + 1: 9, 5, 3 GPUs. On-demand 4.00.
    # 3.9/4 = 0.975: no GPU beyond the quietest hour's 3 is busy 23.4 h; 2/4 = 0.5: GPUs 4-5 (16 h ≥ 12);
    # 1/4 = 0.25: GPUs 6-9 too (8 h ≥ 6).
    curve = [1.0] * 8 + [0.5] * 8 + [0.25] * 8
    assert size_mix(8, 1, 1, curve, reserved, 4.0, 8.0).base_gpus == base


def _plan(contracts, curve=None):
    data = yaml.safe_load(reference_plan_text())
    data.pop("date", None)
    data["forecast"]["daily_curve"] = curve or [1.0] * 8 + [0.5] * 8 + [0.25] * 8
    data["contracts"] = contracts
    return plan_from_mapping(data, "test")


def test_a_mixed_plan_month_by_hand():
    r = plan(_plan({"term": "reserved_1y", "reserved_usd_per_gpu_hour": 1.5, "source": "a quote, 2026-12-01"}))
    a, m = r.answer, r.contracts
    # The input: the Answer's fleet (the reference plan's closed form), rented at the plan's $3.00/GPU-hour.
    assert (a.tp, a.load, a.with_redundancy) == (1, 6, 7)
    # Hours: ceil(6 × c) + 1 = 7 (8 h), 4 (8 h), 3 (1.5 → 2, + 1; 8 h). Break-even 1.5/3 = 0.5: GPU 4 busy 16 h ≥ 12:
    # base 4; GPUs 5-7 busy 8 h: on demand, 3 × 8 = 24 GPU-hours a day.
    assert m.hourly_gpus == [7] * 8 + [4] * 8 + [3] * 8 and m.base_gpus == 4 and m.break_even == pytest.approx(0.5)
    assert m.base_monthly_usd == pytest.approx(4 * 730 * 1.5)  # $4,380
    assert m.on_demand_gpu_hours_per_month == pytest.approx(24 * 730 / 24)  # 730 GPU-hours
    assert m.on_demand_monthly_usd == pytest.approx(730 * 3.0)  # $2,190
    assert m.monthly_usd == pytest.approx(4380 + 2190)  # $6,570, no API, no spot
    assert m.always_on_demand_monthly_usd == pytest.approx(7 * 730 * 3.0)  # $15,330
    # used a day 7×8 + 4×8 + 3×8 = 112 GPU-hours; base in use 4×8 + 4×8 + 3×8 = 88 of 96 committed
    # ESR = 1 − (4 × 24 × 1.5 + 24 × 3) / (112 × 3) = 1 − 216/336
    assert m.effective_savings_rate == pytest.approx(1 - 216 / 336)
    assert (m.commitment_coverage, m.commitment_utilisation) == (pytest.approx(88 / 112), pytest.approx(88 / 96))
    assert m.spot_usd_per_gpu_hour is None and "every request carries the latency promise" in m.spot_source


def test_spot_takes_the_no_promise_share_at_the_catalog_price():
    r = plan(_plan({"term": "reserved_1y", "no_promise_share": 0.5}))
    m = r.contracts
    # catalog (contracts.yaml): H100 SXM 1-year reserved 2.35 (SemiAnalysis), spot 1.25 (Nebius preemptible)
    assert m.base_usd_per_gpu_hour == 2.35 and m.spot_usd_per_gpu_hour == 1.25
    # spot replicas ceil(0.5 × 6 × c): 3 (8 h), 2 (1.5; 8 h), 1 (0.75; 8 h) = 48 GPU-hours a day
    assert m.spot_gpu_hours_per_month == pytest.approx(48 * 730 / 24)
    # the promise fleet carries the other half: ceil(0.5 × 6 × c) + 1 = 4, 3, 2
    assert m.hourly_gpus == [4] * 8 + [3] * 8 + [2] * 8


@pytest.mark.parametrize("curve, says", [
    ([40.0] * 12 + [100.0] * 12, "write 0.40, not 40"),  # percents typed as percents
    ([1.0] * 23, "got 23 value(s) (an hour missing?)"),
    ([1.0] * 25, "got 25 value(s) (an hour twice?)"),
    ([0.5] * 24, "expected the peak hour to be 1"),
    ([1.0] * 12 + [0.0] * 12, "hour 12: 0; expected each value a fraction of the peak hour in (0, 1]"),
])
def test_a_bad_daily_curve_is_one_line_and_exit_2(tmp_path, capsys, curve, says):
    from xlplan.cli import main

    data = yaml.safe_load(reference_plan_text())
    data["forecast"]["daily_curve"] = curve
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    rc = main(["plan", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    lines = [x for x in err.splitlines() if "forecast.daily_curve" in x]
    assert len(lines) == 1 and str(path) in err and says in lines[0], err


def test_contracts_without_a_curve_or_a_price_name_the_field(tmp_path, capsys):
    from xlplan.cli import main

    data = yaml.safe_load(reference_plan_text())
    for contracts, says in (({"term": "reserved_1y"}, "forecast.daily_curve: missing; contracts is given"),
                            ({"term": "reserved_3y"}, "no published reserved_3y price for NVIDIA H100 SXM")):
        data["contracts"] = contracts
        data["forecast"]["daily_curve"] = None if "curve" in says else [1.0] * 24
        path = tmp_path / "plan.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        rc = main(["plan", str(path)])
        err = capsys.readouterr().err
        assert rc == 2 and says in err, err


def test_traffic_measures_a_known_daily_curve():
    # A synthetic log over 7 whole days from a midnight: hour h carries 3,600 × shape[h] requests evenly spread
    # (1 req/s at the peak), so each hour of the day's mean rate ÷ the busiest's is the shape itself.
    from xlplan.evidence.traffic import summarise

    shape = [0.25] * 6 + [0.5] * 3 + [1.0] * 9 + [0.5] * 3 + [0.25] * 3
    t = []
    for day in range(7):
        for h, c in enumerate(shape):
            n = int(3600 * c)
            t += [1_767_225_600 + day * 86400 + h * 3600 + (i + 0.5) * 3600 / n for i in range(n)]
    s = summarise(t, [100] * len(t), [10] * len(t))
    # the last hour is covered up to its last request, 3600/900 ÷ 2 = 2 s short of its end: 2 s of 7 × 3,600 s
    assert s.daily_curve == pytest.approx(shape, abs=0.002)


def test_traffic_says_a_curve_needs_a_day():
    from xlplan.evidence.traffic import summarise
    from xlplan.report.traffic_report import _curve_words, forecast_section

    t = [1_767_225_600 + 60.0 * i for i in range(1000)]  # 1,000 minutes: under a day
    s = summarise(t, [100] * 1000, [10] * 1000)
    assert s.daily_curve is None and "cannot be measured" in _curve_words(None)
    assert "daily_curve" not in forecast_section(s)
