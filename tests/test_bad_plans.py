"""Bad plans: one clear message per problem naming the field path and the value, exit status 2, no traceback."""

import pytest
import yaml

from xlplan.cli import main
from xlplan.io.planfile import reference_plan_text

GOOD = yaml.safe_load(reference_plan_text())


def run_plan(tmp_path, capsys, data, name="plan.yaml"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    rc = main(["plan", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def with_(section, **fields):
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GOOD.items()}
    data[section] = {**data[section], **fields}
    return data


@pytest.mark.slow
def test_good_plan_exits_0(tmp_path, capsys):
    assert run_plan(tmp_path, capsys, GOOD)[0] == 0


def test_missing_section(tmp_path, capsys):
    data = {k: v for k, v in GOOD.items() if k != "forecast"}
    rc, err = run_plan(tmp_path, capsys, data)
    assert rc == 2 and "forecast: missing" in err


def test_negative_rate(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, with_("forecast", peak_rps=-40))
    assert rc == 2 and "forecast.peak_rps: got -40; expected a value greater than 0" in err


def test_utilisation_as_percent(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, with_("forecast", average_utilisation=40))
    assert rc == 2 and "forecast.average_utilisation: got 40" in err and "0.40, not 40" in err


def test_p95_below_p50(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, with_("forecast", prompt_tokens={"p50": 2000, "p95": 1500}))
    assert rc == 2 and "forecast.prompt_tokens" in err and "p95 (1500) is below p50 (2000)" in err


def test_unknown_gpu_did_you_mean(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, with_("hardware", gpu="h100-sx"))
    assert rc == 2 and "hardware.gpu: got 'h100-sx'" in err and "did you mean 'h100-sxm'" in err


def test_unknown_model_did_you_mean(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, with_("model", name="llama-3.1-8"))
    assert rc == 2 and "model" in err and "did you mean" in err


def test_several_problems_each_reported(tmp_path, capsys):
    data = with_("forecast", peak_rps=-1, average_utilisation=40)
    data["hardware"] = {**data["hardware"], "gpu": "h100-sx"}
    rc, err = run_plan(tmp_path, capsys, data)
    assert rc == 2 and "3 problem(s)" in err


def test_misspelt_field(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, with_("forecast", peak_rpm=40))
    assert rc == 2 and "forecast.peak_rpm" in err and "unknown field" in err


def test_not_yaml(tmp_path, capsys):
    rc, err = run_plan(tmp_path, capsys, "forecast: [unclosed\n")
    assert rc == 2 and "not valid YAML" in err


def test_missing_file(tmp_path, capsys):
    rc = main(["plan", str(tmp_path / "nope.yaml")])
    assert rc == 2 and "file not found" in capsys.readouterr().err


def test_model_that_fits_nowhere_is_a_clear_error(tmp_path, capsys):
    # Llama-3.1-405B in bf16 = 811.7e9 B = 756 GiB; on 8 × L4 (22.49 GiB each) nothing fits
    data = with_("model", name="llama-3.1-405b")
    data["hardware"] = {**data["hardware"], "gpu": "l4"}
    rc, err = run_plan(tmp_path, capsys, data)
    assert rc == 2 and "cannot plan: the weights do not fit" in err


@pytest.mark.slow
def test_markdown_not_overwritten_without_force(tmp_path, capsys):
    md = tmp_path / "note.md"
    md.write_text("mine", encoding="utf-8")
    assert main(["plan", "--markdown", str(md)]) == 2
    assert md.read_text(encoding="utf-8") == "mine"
    assert main(["plan", "--markdown", str(md), "--force"]) == 0
    assert md.read_text(encoding="utf-8").startswith("# Capacity note")


def test_a_prompt_longer_than_the_context_is_an_error(tmp_path, capsys):
    # Llama-3.1-8B's config.json: max_position_embeddings 131,072. A 1,000,000-token p99 prompt cannot be served at
    # all; planning for it asked for 54,638 GPUs with only a warning.
    rc, err = run_plan(tmp_path, capsys, with_("forecast", prompt_tokens={"p50": 2000, "p95": 2000, "p99": 1_000_000}))
    assert rc == 2
    assert "forecast.prompt_tokens.p99: got 1,000,000 tokens" in err and "context limit of 131,072 tokens" in err
    # one short of the limit is a valid plan (the p99 prompt + output warning stays a warning)
    from xlplan.io.planfile import read_plan

    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump(with_("forecast", prompt_tokens={"p50": 2000, "p95": 2000, "p99": 131_071})), encoding="utf-8")
    assert read_plan(ok).forecast.prompt_tokens.p99 == 131_071


def test_compute_dtype_the_gpu_lacks(tmp_path, capsys):
    # A100 has no FP8 tensor cores (gpus.csv: "n/a (no FP8)")
    data = with_("hardware", gpu="a100-80gb")
    data["policy"] = {**data["policy"], "compute_dtype": "fp8"}
    rc, err = run_plan(tmp_path, capsys, data)
    assert rc == 2 and "policy.compute_dtype" in err and "no fp8 peak" in err


def test_new_gpu_without_price(tmp_path, capsys):
    data = with_("hardware", gpu={"name": "my-gpu", "memory_gib": 79.18, "bf16_tflops": 989, "hbm_tbps": 3.35},
                 usd_per_gpu_hour=None)
    data["hardware"] = {k: v for k, v in data["hardware"].items() if v is not None}
    rc, err = run_plan(tmp_path, capsys, data)
    assert rc == 2 and "hardware.usd_per_gpu_hour: missing" in err


def test_command_line_typos_get_one_line_naming_the_option(capsys):
    # a mistyped option or a word where a number belongs: exit 2 (the usage-error status) and one line that names
    # the command and the option, never the framework's multi-line box
    for argv, named in ((["plan", "--bogus"], "--bogus"), (["simulate", "--minutes", "abc"], "--minutes"),
                        (["schedule", "--months", "x"], "--months"), (["compare", "--gpus"], "--gpus"),
                        (["nosuchcmd"], "nosuchcmd")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: xlplan") and err.count("\n") == 1 and named in err, err


def test_a_tensor_parallel_degree_that_does_not_divide_the_node_is_named_at_its_field(tmp_path, capsys):
    # a check across sections used to say "(top level): got {…the whole plan…}"; it names policy.tp and the divisors
    # of 8 (1, 2, 4, 8) instead
    rc, err = run_plan(tmp_path, capsys, with_("policy", tp=3))
    line = err.strip()
    assert rc == 2 and line.count("\n") == 0
    assert "policy.tp: got 3; expected a divisor of hardware.gpus_per_node = 8 (1, 2, 4 or 8" in line
    assert "(top level)" not in line and "forecast" not in line


@pytest.mark.slow
def test_an_empty_plan_file_and_a_workbook_given_as_a_plan_say_what_they_are(tmp_path, capsys):
    # a new user's two slips: an empty file read as "got NoneType", and a workbook read as text ("byte 0xc7 is not
    # UTF-8") with no word of `xlplan read`
    from xlplan.cli import main

    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    assert main(["plan", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "got an empty file; expected a mapping with forecast, promise, model, hardware" in err and "NoneType" not in err
    book = tmp_path / "plan.xlsx"
    assert main(["workbook", "-o", str(book)]) == 0
    capsys.readouterr()
    assert main(["plan", str(book)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a workbook, not a plan file" in err and f"xlplan read {book} -o plan.yaml" in err


def test_a_conversation_too_big_for_memory_is_named_before_the_step_time(tmp_path, capsys):
    # llama-3.1-8b (131,072-token context) on one L4: 22.49 GiB as reported x 0.90 - 14.96 GiB of weights - overhead
    # leaves a few GiB of KV cache; a conversation of ~60,000 tokens at 128 KiB a token needs ~7.4 GiB. The cause is
    # memory for even one conversation (the second cause, after the context length), not the inter-token
    # target it used to name ("one decode step takes 0.0626 s" against a 0.1 s target)
    from xlplan.cli import main

    path = tmp_path / "kvbig.yaml"
    path.write_text("forecast:\n  peak_rps: 1\n  prompt_tokens: {p50: 60000, p95: 120000, p99: 128000}\n"
                    "  output_tokens: {p50: 300, p95: 600}\npromise: {ttft_s: 60, itl_s: 0.1}\nmodel: {name: llama-3.1-8b}\n"
                    "hardware: {gpu: l4, usd_per_gpu_hour: 0.8, gpus_per_node: 1}\n", encoding="utf-8")
    assert main(["plan", str(path), "--no-verify"]) == 2
    err = capsys.readouterr().err
    assert "memory for even one conversation" in err and "inter-token target" not in err and err.count("\n") == 1


@pytest.mark.parametrize("command", [["capacity", "--gpus", "1000000", "--no-verify"], ["simulate", "--gpus", "10000000"]])
def test_a_fleet_flag_past_the_answers_bound_is_refused_before_any_work(command, capsys):
    # 100,000 GPUs is the answer's bound (plausibility.RESULT_BOUNDS: more than any single published inference fleet);
    # a million, or ten, is a slip the simulation took 18 s and 52 s to run into: refused in one line, exit 2, naming
    # the option, the bound and how to accept it
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --gpus: result.fleet_gpus: got ")
    if command[2] == "1000000":
        assert "0 to 100,000" in err and "--accept-implausible result.fleet_gpus" in err
    else:  # ten million is past the ceiling no acceptance lifts (plausibility.FLEET_CEILING_GPUS): no accept hint
        assert "xlplan sizes at most 1,000,000 GPUs" in err and "--accept-implausible" not in err


def _accepting(tmp_path, **forecast):
    data = yaml.safe_load(reference_plan_text())
    data["forecast"].update(forecast)
    data["accept_implausible"] = ["result.fleet_gpus", "result.monthly_usd"]
    path = tmp_path / "accepting.yaml"
    path.write_text(yaml.safe_dump({**data, "date": str(data["date"])}), encoding="utf-8")
    return str(path)


def test_a_plan_accepting_every_bound_is_refused_past_the_ceiling_not_computed(tmp_path, capsys, monkeypatch):
    # 10⁶ req/s of 100,000-token prompts and outputs: the compute path alone is 10⁶ × 2 × 8.03e9 FLOP × ~2e5 tokens
    # ÷ 989e12 FLOP/s ≈ 3e6 GPUs at 100% MFU, past the 10⁶ xlplan sizes accepted or not. The queueing path at that
    # load is not summed at all (its offered load alone passes the ceiling), so no Erlang sum of 10⁸ servers runs.
    from xlplan.serving import queueing

    def no_huge_sums(servers, offered_erlangs):
        assert offered_erlangs < 1_000_000, "an Erlang sum past the ceiling"
        return erlang_b(servers, offered_erlangs)

    erlang_b = queueing.erlang_b
    monkeypatch.setattr(queueing, "erlang_b", no_huge_sums)
    lengths = {"p50": 100_000, "p95": 120_000, "p99": 128_000}
    path = _accepting(tmp_path, peak_rps=1e6, prompt_tokens=lengths, output_tokens=dict(lengths))
    assert main(["plan", path, "--no-verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "result.fleet_gpus: got" in err and "xlplan sizes at most 1,000,000 GPUs" in err
    assert "--accept-implausible" not in err  # nothing to accept: the ceiling is not a plausible range


def test_a_simulated_fleet_larger_than_its_run_is_refused(tmp_path, capsys):
    # accepted past the 100,000 bound, 900,000 replicas of TP 1 for the reference's run (40 req/s over its minutes:
    # some 24,000 requests) would leave 97% of them without a request: refused naming the run's requests
    path = _accepting(tmp_path)
    assert main(["simulate", path, "--gpus", "900000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "900,000 replicas of TP 1 for" in err and "most would never serve one" in err


def test_a_benchmarks_degree_past_any_nvlink_domain_is_refused(capsys):
    # calibrate --tp names the GPUs one replica ran on: 100,000 is past the 72 of the largest NVLink domain (NVL72),
    # the plan's own range for policy.tp, and is refused before any benchmark file is read
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "examples" / "review" / "bench" / "vllm-c64.json"
    assert main(["calibrate", str(bench), "--tp", "100000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --tp: got 100,000;") and "1 to 72" in err


@pytest.mark.slow
def test_compare_says_no_gpu_can_carry_a_plan_past_the_ceiling(tmp_path, capsys):
    # every GPU's fleet for 10⁶ req/s of 100,000-token conversations is past the 10⁶ GPUs xlplan sizes: the headline
    # says none can carry it and why, not that prices are missing
    lengths = {"p50": 100_000, "p95": 120_000, "p99": 128_000}
    path = _accepting(tmp_path, peak_rps=1e6, prompt_tokens=lengths, output_tokens=dict(lengths))
    main(["compare", path])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("Cheapest datacenter GPU"))
    assert "none can carry the plan (result.fleet_gpus: got" in line and "price missing" not in line
