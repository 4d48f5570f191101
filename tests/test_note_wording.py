"""The words read as the numbers mean (issue 22): singular for one in every text the CLI prints, the API comparison as a
factor above one in the direction of its words, a missing price said as missing, and provenance a person can follow;
and the minimum replica explained where it binds."""

from __future__ import annotations

import re

import pytest
import yaml
from planhelp import replan

from xlplan import catalog, words
from xlplan.cli import main
from xlplan.decide.compare import _binds
from xlplan.decide.planner import plan
from xlplan.io.planfile import reference_plan
from xlplan.report.note import _api_ratio_sentence, render_markdown, render_text
from xlplan.schema.plan import Plan
from xlplan.words import readable_source


def test_a_load_one_replica_carries_is_explained_and_singular():
    # 0.2 req/s of the runbook's traffic: Little's Law puts 0.2 × ~15 s = 3 conversations in flight, far below what one
    # H100 holds (the runbook's 150 per GPU), so no path needs more than one replica of TP 1: the minimum replica binds
    d = reference_plan().model_dump()
    d["forecast"]["peak_rps"] = 0.2
    r = plan(Plan.model_validate(d))
    answer = next(line for line in render_text(r).splitlines() if line.startswith("Answer:"))
    assert answer.startswith("Answer: 1 GPU for the load,"), answer
    assert "binding: minimum replica (one replica of 1 GPU carries the peak with room to spare" in answer


# ------------------------------------------------------------------------------------------ one in the singular (issue 22)

# "1" standing alone (not the end of 0.1, 2.1 or 1,001) before a plural count noun, the "(s)" hedge, or one GPU or
# replica with a plural verb; units such as requests/s are rates, not counts, and are left out
ONE_AS_MANY = re.compile(r"(?<![\d.,])1 (GPUs|replicas|nodes|seeds|months|requests|days|minutes|options|preemptions|"
                         r"years|priced options|more options)\b(?!/)|\w\(s\)|(?<![\d.,])1 (GPU|replica) keep\b")


def _tiny(**sections) -> Plan:
    # 0.2 req/s of the runbook's traffic: 0.2 × 15 s = 3 conversations in flight, which one H100 holds (the first
    # test above), so the load is one GPU; sections change the rest
    return replan(reference_plan(), forecast={"peak_rps": 0.2}, **sections)


def test_a_count_is_singular_exactly_where_it_prints_as_one():
    # English: one GPU, two GPUs, zero GPUs; a figure printed as "1" (1.0 with %g, 0.9996 to three figures) is one
    assert [words.count(n, "GPU") for n in (0, 1, 2, 1000)] == ["0 GPUs", "1 GPU", "2 GPUs", "1,000 GPUs"]
    assert words.count(1.0, "year", fmt="g") == "1 year" and words.count(1.5, "year", fmt="g") == "1.5 years"
    assert words.count(0.9996, "minute", fmt=".3g") == "1 minute"
    assert words.count(1, "more option") == "1 more option" and words.count(3, "more option") == "3 more options"
    assert (words.verb(1, "keeps", "keep"), words.verb(2, "keeps", "keep")) == ("keeps", "keep")


def test_a_one_gpu_note_reads_singular_and_a_larger_one_plural(ref):
    # no redundancy and nodes of one GPU: load, fleet, purchase and bill are all one GPU, one node; the rented bill is
    # 1 GPU × $3/h × 730 h = $2,190
    r = plan(_tiny(policy={"redundancy": 0}, hardware={"gpus_per_node": 1}))
    assert (r.answer.load, r.answer.with_redundancy, r.answer.purchased, r.answer.billed_gpus) == (1, 1, 1, 1)
    for text in (render_text(r), render_markdown(r)):
        assert ONE_AS_MANY.search(text) is None, ONE_AS_MANY.search(text)
    text = render_text(r)
    assert "Monthly bill             1 GPU (rented) × $3/h × 730 h = $2,190 / month" in text
    assert "(1 node of 1)" in text and "→ 1 GPU; p95 prefill" in text
    assert "→ 1 replica keeps the p95 wait for a slot" in text and "= 1 GPU\n" in text  # Erlang C: 1 × 1 GPU per replica
    # the runbook's own example stays plural: 4 GPUs for the load + 1 spare = 5, a node of 8 (document 14)
    assert "4 GPUs for the load (TP 1) + 1 spare replica = 5 with redundancy → 8 purchased (1 node of 8)" in render_text(ref)


@pytest.mark.slow
def test_every_cli_text_says_one_gpu_and_keeps_the_plural_for_more(tmp_path, capsys):
    # the one-GPU plan above through every command that prints words: plan (and its Markdown note), compare,
    # schedule (one month, one day's lead time), capacity and simulate at one GPU
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump(_tiny(policy={"redundancy": 0}, hardware={"gpus_per_node": 1}).model_dump(mode="json", exclude_none=True)))
    md = tmp_path / "one.md"
    runs = [["plan", str(one), "--markdown", str(md)], ["compare", str(one), "--gpus", "h100-sxm", "--verify-top", "1"],
            ["schedule", str(one), "--growth", "0.01", "--months", "1", "--lead-time-days", "1"],
            ["capacity", str(one), "--gpus", "1"], ["simulate", str(one), "--gpus", "1", "--search"]]
    texts = {}
    for argv in runs:
        assert main(argv) == 0, argv
        texts[argv[0]] = capsys.readouterr().out
    texts["markdown"] = md.read_text(encoding="utf-8")
    for name, text in texts.items():
        assert ONE_AS_MANY.search(text) is None, (name, ONE_AS_MANY.search(text))
    assert "Verified at peak (simulated)  1 GPU keeps the promise" in texts["plan"]
    assert "lead time 1 day)" in texts["schedule"]
    assert texts["capacity"].startswith("1 GPU (TP 1, 1 replica) keeps the promise up to ")
    assert texts["simulate"].startswith("1 GPU = 1 replica of TP 1: ")
    assert "Verified load: 1 GPU (1 replica of TP 1) keeps the promise" in texts["simulate"]
    # with one spare replica and nodes of 8, renting per GPU: 1 + 1 = 2 GPUs rented (8 would be a whole node)
    two = tmp_path / "two.yaml"
    two.write_text(yaml.safe_dump(_tiny().model_dump(mode="json", exclude_none=True)))
    assert main(["plan", str(two)]) == 0
    note = capsys.readouterr().out
    assert "2 GPUs keep the promise with one replica lost" in note and "rent 2 GPUs, the fleet with redundancy" in note
    assert "2 GPUs (rented) × $3/h × 730 h = $4,380" in note and ONE_AS_MANY.search(note) is None


def test_paths_that_bind_together_take_a_plural_verb():
    # "latency and queueing" are two subjects; "memory" one
    assert _binds("latency and queueing") == "latency and queueing bind there"
    assert _binds("memory") == "memory binds there"


# ------------------------------------------------------------------------------------ ratios in the direction of the words


def _api_sentence(r) -> str:
    return next(p for p in render_text(r).split("\n") if "self-hosting" in p)


def test_the_api_comparison_is_a_factor_above_one_in_the_direction_of_its_words(ref, ref_plan):
    # The reference: the API bills 40 req/s × 0.40 × 730 h × 3,600 s = 42.05 M requests a month × (2,000 × $0.25 +
    # 300 × $0.75) per million = $30,485; the closed form's 7 GPUs × $3 × 730 = $15,330: self-hosting is
    # 30,485 / 15,330 = 1.99, so "2.0× cheaper than the API"
    assert ref.cost.api_monthly_usd == pytest.approx(30_484.8) and ref.answer.monthly_usd == pytest.approx(15_330)
    assert "self-hosting is 2.0× cheaper than the API at this volume" in _api_sentence(ref)
    # at $0.005 per million either way (the plausible floor) the API bills 42.05 M × 2,300 tokens × $0.005/M = $483.55:
    # the API is the cheaper, by 15,330 / 483.55 = 31.7×, said as the API being 31.7× cheaper, never "0.0× cheaper"
    # (nor "31.7× dearer", whose subject is the one not chosen)
    cheap = plan(replan(ref_plan, api={"usd_per_mtok_input": 0.005, "usd_per_mtok_output": 0.005}))
    assert cheap.cost.api_monthly_usd == pytest.approx(483.552)
    sentence = _api_sentence(cheap)
    assert "the API is 31.7× cheaper than self-hosting at this volume" in sentence and "dearer" not in sentence
    for text in (_api_sentence(ref), sentence):
        assert all(float(x.replace(",", "")) >= 1 for x in re.findall(r"([\d,.]+)×", text)), text


def test_a_factor_that_rounds_to_one_is_said_as_about_the_same():
    # $1,000 against $1,020 is 1.02 either way: "1.0× cheaper" would state a difference as none; past 5% it is a factor
    assert "costs about what the API does" in _api_ratio_sentence(1000.0, 1020.0)
    assert "costs about what the API does" in _api_ratio_sentence(1020.0, 1000.0)
    assert "self-hosting is 1.1× cheaper than the API" in _api_ratio_sentence(1100.0, 1000.0)
    assert "the API is 2.0× cheaper than self-hosting" in _api_ratio_sentence(500.0, 1000.0)
    assert "×" not in _api_ratio_sentence(0.0, 1000.0)  # an API that costs nothing: no factor to give


# ------------------------------------------------------------------------------------------ the catalog, as printed


def test_a_missing_gpu_price_is_printed_as_missing_never_as_zero(capsys):
    assert words.hourly_price(None) == "price missing" and words.hourly_price(2.99) == "$2.99/h"
    assert main(["catalog", "gpus"]) == 0
    out = capsys.readouterr().out
    assert "$0.00" not in out
    rows = {line.split()[0]: line for line in out.splitlines() if not line.startswith(" ")}
    unpriced = [k for k in catalog.gpu_names() if catalog.get_gpu(k).usd_per_gpu_hour is None]
    assert unpriced and all(rows[k].endswith("price missing") for k in unpriced)  # the H20, B300 and others: no listing
    h100 = catalog.get_gpu("h100-sxm").usd_per_gpu_hour
    assert rows["h100-sxm"].endswith(f"${h100:.2f}/h")


def test_a_bought_fleet_without_a_rental_price_says_it_is_missing(ref_plan):
    # H20s bought at a stated node price: the catalog has no rental price for the H20, so renting instead has no bill
    # and buying no payback; the note says the price is missing rather than quoting $0 rent or "never pays back"
    bought = replan(ref_plan, hardware={"gpu": "h20", "gpus_per_node": 8, "usd_per_gpu_hour": None},
                    costs={"mode": "buy", "capex_usd_per_node": 200000, "kw_per_gpu": 1.0, "usd_per_kwh": 0.09,
                           "hardware_ops_usd_per_month": 0})
    row = next(line for line in render_text(plan(bought)).splitlines() if "Against renting" in line)
    assert "rental price missing for this GPU" in row and "$" not in row and "never" not in row


@pytest.mark.parametrize(("raw", "shown"), [
    # an id beside words: the words stay, the separator before the id goes with it
    ("71 in public code tables, code-index id 61509561483; GA102 whitepaper not read",
     "71 in public code tables; GA102 whitepaper not read"),
    # brackets holding ids alone go; a URL beside them stays
    ("'24576MiB' (code-index ids 67391834167, 18095515282, 49936164697) | price: github.com/toolshedlabs-hash/gpu-price-feed",
     "'24576MiB' | price: github.com/toolshedlabs-hash/gpu-price-feed"),
    ("'24564MiB' (code-index id 48084861389; also ids 56815166488, 10926136859) - NOT 24576MiB", "'24564MiB' - NOT 24576MiB"),
    ("'23028MiB' (ECC on; code-index ids 566308614, 23034786879)", "'23028MiB' (ECC on)"),
    ("a public catalog (id 38790003559) - SECONDARY", "a public catalog - SECONDARY"),
    # an id heading a bracket's contents: the contents stay
    ("inlined in public code (code-index id 53185873524: 48 layers, 3840)", "inlined in public code (48 layers, 3840)"),
    ("(900 GB/s per GPU) and code-index id 69072427599; 600 W", "(900 GB/s per GPU); 600 W"),
    # commits and figures are not ids: kept
    ("pytorch/ao roofline_utils.py @0598012; memory 68702699520 bytes", "pytorch/ao roofline_utils.py @0598012; memory 68702699520 bytes"),
    ("mem_bandwidth 4022 GB/s (code index) - SECONDARY", "mem_bandwidth 4022 GB/s (public code) - SECONDARY"),
])
def test_provenance_is_printed_without_opaque_ids(raw, shown):
    assert readable_source(raw) == shown


def test_the_catalog_prints_followable_sources_and_its_json_keeps_the_data(capsys):
    assert main(["catalog", "gpus"]) == 0
    assert main(["catalog", "models"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"code-index|\bids? \d{6,}", out)
    assert "github.com/toolshedlabs-hash/gpu-price-feed README" in out and "stas00/ml-engineering" in out
    # the data itself is unchanged: --json gives the catalog's source as written, ids included
    assert main(["catalog", "gpus", "--json"]) == 0
    assert "code-index id 61509561483" in capsys.readouterr().out


def _user_plan(**changes):
    from xlplan.schema.plan import Plan

    base = {"forecast": {"peak_rps": 3, "prompt_tokens": {"p50": 800, "p95": 2000, "p99": 3000},
                         "output_tokens": {"p50": 150, "p95": 1500, "p99": 4000}, "average_utilisation": 0.3},
            "promise": {"ttft_s": 2.0, "itl_s": 0.08, "percentile": 95},
            "model": {"name": "llama-3.1-8b", "weights_dtype": "fp8", "kv_dtype": "bf16"},
            "hardware": {"gpu": "rtx-5090", "gpus_per_node": 8, "usd_per_gpu_hour": 0.69}}
    return Plan.model_validate({**base, **changes})


@pytest.mark.slow
def test_a_simulation_that_needs_more_than_every_path_names_the_queue_not_the_minimum_replica():
    # A new user's plan (llama-3.1-8b fp8 on an RTX 5090, heavy-tailed outputs): every closed-form path fits one GPU, so
    # the closed form binds 'minimum replica'; the simulation needs 2 (the runbook's 1 keeps the promise on seed 1 but
    # not on every seed). The Answer said "2 GPUs for the load ... binding: minimum replica (one replica of 1 GPU
    # carries the peak ...)", and the note "so the redundancy stays spare at peak" while the 2 it needs are the
    # runbook's 1 + 1 spare: both contradict the load they sit beside.
    from xlplan.decide.planner import plan as run_plan
    from xlplan.report.note import render_text

    # the closed form's setting held (TP 1, 512-token steps): at another budget the configuration search finds one GPU
    r = run_plan(_user_plan(policy={"tp": 1, "max_num_batched_tokens": 512}), verify="auto")
    assert r.closed_form.load == 1 and r.answer.load == 2
    assert r.answer.binding == "queueing (simulated)"
    text = render_text(r)
    assert "binding: queueing (simulated) (every closed-form path fits 1 GPU" in text
    assert "stays spare" not in text and "but not on every seed" in text and "the redundancy GPU is needed at peak" in text


@pytest.mark.slow
def test_no_redundancy_is_said_as_none_kept():
    # redundancy 0 and a tiny peak: the runbook's 1 GPU holds; there is no spare to say "stays spare" of
    from xlplan.decide.planner import plan as run_plan
    from xlplan.report.note import render_text

    r = run_plan(_user_plan(forecast={"peak_rps": 0.2, "prompt_tokens": {"p50": 500, "p95": 1000, "p99": 1500},
                                      "output_tokens": {"p50": 100, "p95": 200, "p99": 300}},
                            model={"name": "llama-3.1-8b"}, hardware={"gpu": "h100-sxm", "usd_per_gpu_hour": 2.99},
                            promise={"ttft_s": 1.0, "itl_s": 0.05}, policy={"redundancy": 0}), verify="auto")
    text = render_text(r)
    assert "the plan keeps no redundancy" in text and "stays spare" not in text


@pytest.mark.slow
def test_the_verified_line_names_the_promises_own_percentile():
    # a promise at p99: the note's verified line states the p99 TTFT and inter-token gap the simulation measured at
    # the verified load (its curve's point there), not the p95 it used to label every promise with
    r = plan(replan(reference_plan(), promise={"ttft_s": 1.0, "itl_s": 0.05, "percentile": 99}), verify=True)
    at = next(x for x in r.verified.curve if x.gpus == r.verified.load)
    line = next(x for x in render_text(r).splitlines() if "Verified at peak" in x)
    assert f"(p99 TTFT {words.seconds(at.ttft_at_percentile_s)}, inter-token {words.seconds(at.itl_at_percentile_s)})" in line


@pytest.mark.slow
def test_an_sglang_fleet_past_the_closed_form_is_put_down_to_its_prefill_first_schedule():
    # The runbook's traffic (40 req/s) on SGLang: the simulation schedules SGLang's prefill in steps of its own
    # (xlplan.serving.engines.prefill_first), which the closed form's mixed steps do not count, and needs more GPUs
    # than every closed-form path; the note says why in SGLang's terms. A mixed schedule's disagreement keeps its own
    # words (the lengths), with nothing of prefill first.
    from xlplan.decide.planner import plan as run_plan
    from xlplan.report.note import render_text
    from xlplan.report.note_fleet import _disagreement

    base = reference_plan().model_dump(exclude_none=True)
    base["policy"] = {"engine": "sglang", "redundancy": 1, "tp": 1}  # TP held: the configuration search moves to TP 4
    r = run_plan(Plan.model_validate(base), verify="auto")
    assert r.verified.schedule == "prefill_first" and r.answer.load > r.closed_form.load
    text = render_text(r)
    assert "SGLang runs each prefill in a step of its own while the running requests wait" in text
    assert "which the closed form's mixed steps do not count, so requests queue for a slot" in text
    mixed = _disagreement(r.closed_form, r.verified, tail=False)
    assert "prefill first" not in mixed and "varies about the mean" in mixed
