"""The sample files in examples/: the README's commands run on them, every format has one, and they hold what the generator drew.

Each README command runs in-process from the repository root and must write nothing; each file is under 300 KB and read
by some command; ``examples/make_examples.py`` writes the same files again; and the readers find in them the rate,
lengths, efficiencies and verdict the generator put there (each bound derived in a comment from its parameters).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from xlplan.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GENERATOR = EXAMPLES / "make_examples.py"
MAX_BYTES = 300 * 1024
PRUNED = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", "build", "dist", "out"}


def _generator():
    """examples/make_examples.py as a module (its constants are the truths the files were drawn from)."""
    spec = importlib.util.spec_from_file_location("make_examples", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readme_commands() -> list[str]:
    """The lines of the bash block in README.md's '## Sample files' section, each an `xlplan` command."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## Sample files\n(.*?)(?=^## )", text, flags=re.MULTILINE | re.DOTALL)
    assert m, "README.md has no '## Sample files' section"
    blocks = re.findall(r"^```bash\n(.*?)^```", m.group(1), flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, "the Sample files section should hold one bash block of commands"
    return [line.strip() for line in blocks[0].splitlines() if line.strip()]


COMMANDS = readme_commands()


def review_commands() -> list[str]:
    """The lines of the bash block in README.md's '## The monthly review' section: the sample month's review."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## The monthly review\n(.*?)(?=^## )", text, flags=re.MULTILINE | re.DOTALL)
    assert m, "README.md has no '## The monthly review' section"
    blocks = re.findall(r"^```bash\n(.*?)^```", m.group(1), flags=re.MULTILINE | re.DOTALL)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip()]


REVIEW_COMMANDS = review_commands()


def _argv(command: str) -> list[str]:
    """The command's arguments after `xlplan`, with shell globs expanded from the repository root as bash would."""
    words = shlex.split(command)
    assert words[0] == "xlplan", f"not an xlplan command: {command!r}"
    assert not set(words) & {"|", "&&", ";", ">", ">>", "<", "||"}, f"one plain command a line, please: {command!r}"
    out = []
    for w in words[1:]:
        if any(ch in w for ch in "*?[") and not w.startswith("-"):
            matches = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob(w))
            assert matches, f"{w!r} in {command!r} matches no file"
            out += matches
        else:
            out.append(w)
    return out


def _files_named(commands: list[str]) -> set[Path]:
    """Every existing file a command names (after glob expansion), as absolute paths."""
    named = set()
    for c in commands:
        for a in _argv(c):
            p = ROOT / a
            if not a.startswith("-") and p.is_file():
                named.add(p.resolve())
    return named


def _example_files() -> list[Path]:
    """The sample files: everything under examples/ but the generator (and Python's caches)."""
    return sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and p != GENERATOR and "__pycache__" not in p.parts)


def _repo_files() -> set[str]:
    """Every file in the checkout, build outputs and caches aside (a command that wrote one would add to it)."""
    found = set()
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in PRUNED and not d.endswith(".egg-info")]
        found.update(os.path.relpath(os.path.join(folder, n), ROOT) for n in names)
    return found


def _examples_state() -> dict[str, tuple[int, int]]:
    return {p.relative_to(ROOT).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in EXAMPLES.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_the_readme_has_commands_for_every_reader():
    verbs = {shlex.split(c)[1] for c in COMMANDS}
    assert verbs == {"traffic", "calibrate", "confirm"}
    assert len(COMMANDS) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=[f"{i:02d}-{shlex.split(c)[1]}" for i, c in enumerate(COMMANDS)])
def test_readme_command_runs_and_writes_nothing(command, monkeypatch, capsys):
    # run from the repository root, in-process, as `.venv/bin/xlplan` would: exit 0, no traceback, no error line, and
    # the checkout exactly as before (no new file anywhere; examples/ untouched, down to the modification times)
    monkeypatch.chdir(ROOT)
    before_files, before_examples = _repo_files(), _examples_state()
    code = main(_argv(command))
    out, err = capsys.readouterr()
    assert code == 0, f"{command}\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
    assert "Traceback" not in out + err and "error:" not in err
    assert out.strip(), f"{command} printed nothing"
    assert _repo_files() == before_files, f"{command} wrote {sorted(_repo_files() - before_files)}"
    assert _examples_state() == before_examples, f"{command} changed examples/"
    if shlex.split(command)[1] == "confirm":
        # in name order the scrapes are in time order: taken as given, no counter falls, no restart guessed
        assert "not as given" not in out and "restart" not in out, (
            "confirm reordered or misread the example scrapes: taken in name order they are in time order")


def test_sample_files_are_small_and_each_is_used_by_a_readme_command():
    files = _example_files()
    assert files
    big = [f"{p.relative_to(ROOT)}: {p.stat().st_size:,} bytes" for p in files if p.stat().st_size >= MAX_BYTES]
    assert big == [], f"sample files of 300 KB or more: {big}"
    unused = sorted(str(p.relative_to(ROOT)) for p in files if p.resolve() not in _files_named(COMMANDS + REVIEW_COMMANDS))
    assert unused == [], f"sample files no README command reads: {unused}"


@pytest.mark.slow
@pytest.mark.parametrize("command", REVIEW_COMMANDS)
def test_the_readme_review_of_the_sample_month_runs_writes_nothing_and_asks_for_action(command, monkeypatch, capsys):
    # the sample month was drawn with prompts of median REVIEW_PROMPT_MEDIAN and spread REVIEW_PROMPT_SIGMA: p95
    # 2,300 x e^(1.645 x 0.25) = 3,470 against the plan's 2,000, so the forecast's p95 prompts rise by over half; and the
    # replica's TTFT (a queue of 0.35 s for most requests plus the longer prompts' prefill) breaks the 1 s promise at p95:
    # the review exits 1, the month needs action, and writes nothing
    g = _generator()
    p95 = g.REVIEW_PROMPT_MEDIAN * math.exp(1.645 * g.REVIEW_PROMPT_SIGMA)
    monkeypatch.chdir(ROOT)
    before_files, before_examples = _repo_files(), _examples_state()
    code = main(_argv(command))
    out, err = capsys.readouterr()
    assert code == 1, f"{command}\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
    assert "Traceback" not in out + err and "error:" not in err and "ACTION NEEDED" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("p95 prompts"))
    measured = float(row.split()[3].replace(",", ""))
    assert abs(measured / p95 - 1) < 0.05, (measured, p95)
    assert "missed" in out and "derived" in out
    assert _repo_files() == before_files and _examples_state() == before_examples
    # the README's excerpt of this output is the output: each line it shows is printed as shown
    printed = set(out.splitlines())
    assert [line for line in review_excerpt() if line not in printed] == []


def review_excerpt() -> list[str]:
    """The lines of the README's 'It prints (excerpt…)' block in '## The monthly review', less its '…' and blanks."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## The monthly review\n(.*?)(?=^## )", text, flags=re.MULTILINE | re.DOTALL)
    block = re.search(r"It prints \(excerpt[^\n]*\n\n```\n(.*?)^```", m.group(1), flags=re.MULTILINE | re.DOTALL)
    assert block, "the monthly review section shows no excerpt of its output"
    return [line for line in block.group(1).splitlines() if line.strip() and line.strip() != "…"]


def _kind(path: Path) -> str:
    """What a sample file is, from its content (as the readers tell formats apart), not from its name."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        return "gzip log"
    if raw[:4] == b"PAR1":
        return "parquet log"
    text = raw.decode("utf-8")
    if text.startswith("# HELP") and "vllm:" in text:
        return "vllm scrape"
    if path.suffix in (".yaml", ".yml"):
        return "plan"
    first = text.lstrip()[:1]
    if first == "[":
        records = json.loads(text)
        return "litellm log" if {"request_id", "startTime", "spend", "call_type"} <= set(records[0]) else "json array log"
    if first == "{":
        lines = [line for line in text.splitlines() if line.strip()]
        try:
            d = json.loads(text)
        except json.JSONDecodeError:  # several objects: JSON Lines
            return "jsonl log" if "usage" in json.loads(lines[0]) else "jsonl"
        if "output_throughput" in d and "mean_itl_ms" in d:
            return "vllm result"
        if isinstance(d.get("benchmarks"), list):
            return "guidellm report"
        if isinstance(d.get("inter_token_latency"), dict) and "input_config" in d:
            return "genai-perf export"
        return "json"
    if text.splitlines()[0].count(",") >= 2:
        return "csv log"
    return "other"


def test_every_format_has_a_sample_a_readme_command_reads():
    kinds = {_kind(p) for p in _files_named(COMMANDS)}
    wanted = {"jsonl log", "litellm log", "csv log", "parquet log", "gzip log", "vllm result", "guidellm report",
              "genai-perf export", "vllm scrape", "plan"}
    assert wanted <= kinds, f"no README command reads a {sorted(wanted - kinds)}"
    # the real tools' own key sets, not the minimum the readers need
    vllm = json.loads((EXAMPLES / "bench" / "vllm-c64.json").read_text())
    assert {"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
            "duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput",
            "total_token_throughput"} <= set(vllm)
    assert {f"{s}_{m}_ms" for s in ("mean", "median", "std", "p99") for m in ("ttft", "tpot", "itl", "e2el")} <= set(vllm)
    record = json.loads((EXAMPLES / "logs" / "openai-usage.jsonl").read_text().splitlines()[0])
    assert set(record) == {"id", "object", "created", "model", "usage"} and record["object"] == "chat.completion"
    assert set(record["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"}
    scrape = (EXAMPLES / "scrapes" / "vllm-01.prom").read_text()
    assert scrape.count("# HELP ") > 30 and "vllm:time_to_first_token_seconds_bucket{" in scrape
    assert 'engine="0"' in scrape and 'model_name="meta-llama/Llama-3.1-8B-Instruct"' in scrape


def test_the_gz_log_is_the_jsonl_log_compressed():
    plain = (EXAMPLES / "logs" / "openai-usage.jsonl").read_bytes()
    assert gzip.decompress((EXAMPLES / "logs" / "openai-usage.jsonl.gz").read_bytes()) == plain


def test_csv_peak_is_within_the_rate_the_generator_drew():
    # the generator draws a Poisson process at rate_rps(t) = 25 − 15·cos(2πt/3600) req/s (10 at 14:00, 40 at 14:30); the
    # CSV holds SLICES['requests-csv'] = [1755, 1830) s, where the rate is 39.95–40.0 req/s. A 60 s window then holds
    # Poisson(≈2,400) requests: σ = √2400 ≈ 49, i.e. 0.82 req/s; the sliding peak over a 75 s log sits within a few σ
    # of the rate, so within [min rate − 5σ, max rate + 5σ] ≈ [35.9, 44.1] req/s. The mean rate (requests ÷ span) is
    # within 5σ of the rate too, over the 75 s: σ = √3000 / 75 ≈ 0.73 req/s.
    from xlplan.evidence.traffic import summarise
    from xlplan.io.logs import read_logs

    gen = _generator()
    a, b = gen.SLICES["requests-csv"]
    rates = gen.rate_rps([a + (b - a) * k / 100 for k in range(101)])
    lo, hi = float(min(rates)), float(max(rates))
    sigma = (hi * 60) ** 0.5 / 60
    r = read_logs([EXAMPLES / "logs" / "requests.csv"])
    s = summarise(r.t_s, r.prompt, r.output, r.cached, 60.0, r.offset_s)
    assert lo - 5 * sigma <= s.peak_rps <= hi + 5 * sigma
    assert lo - 5 * (hi * (b - a)) ** 0.5 / (b - a) <= s.mean_rps <= hi + 5 * (hi * (b - a)) ** 0.5 / (b - a)
    # lengths: log-normal prompts of median PROMPT_MEDIAN (1,800) and outputs of median OUTPUT_MEDIAN (260); a p50 of
    # ~3,000 draws lies within ±5% of the median (its standard error is 1.25·σ/√n ≈ 1.4% of it for σ = 0.6)
    assert s.prompt.p50 == pytest.approx(gen.PROMPT_MEDIAN, rel=0.05)
    assert s.output.p50 == pytest.approx(gen.OUTPUT_MEDIAN, rel=0.05)
    # cached tokens: 70% of requests share a 544-token system prompt and 30% of those a share of their history, so
    # prefix reuse ≈ 0.7·(544 + 0.3·½·E[prompt − 544]) ÷ E[prompt] with E[prompt] = 1800·e^{0.18} ≈ 2,155: ≈ 0.26
    assert s.prefix_reuse == pytest.approx(0.26, abs=0.03)


def test_the_csv_and_the_parquet_log_are_one_contiguous_stretch():
    from xlplan.io.logs import read_logs

    gen = _generator()
    assert gen.SLICES["requests-csv"][1] == gen.SLICES["requests-parquet"][0]
    both = read_logs([EXAMPLES / "logs" / "requests.csv", EXAMPLES / "logs" / "requests.parquet"])
    assert both.bad.total == 0
    t = sorted(both.t_s)
    assert max(b - a for a, b in zip(t, t[1:])) < 1.0  # at ~40 req/s no gap of a second, across the files' seam too


def test_calibrate_finds_the_efficiencies_the_benchmarks_were_drawn_at():
    # the results hold xlplan's own prediction at gen.true_efficiencies() (with per-request scatter and 2% noise per run):
    # the fields the runs identify must hold the truth inside their 95% intervals, from each tool's files and from all
    from xlplan.evidence.bench_conditions import conditions_of_plan
    from xlplan.evidence.calibrate import fit
    from xlplan.io.bench_results import read_results
    from xlplan.io.planfile import reference_plan

    truth = _generator().true_efficiencies()
    bench = EXAMPLES / "bench"
    groups = {"vllm": sorted(bench.glob("vllm-c*.json")), "guidellm": [bench / "guidellm-benchmarks.json"]}
    groups["all"] = groups["vllm"] + groups["guidellm"] + [bench / "genai-perf-c64" / "profile_export_genai_perf.json"]
    for name, paths in groups.items():
        runs = read_results(paths, plan_model="llama-3.1-8b")
        assert runs.warnings == [], name
        f = fit(runs, conditions_of_plan(reference_plan(), 1))
        assert {"prefill_mfu", "step_overhead_s"} <= set(f.identified), name
        assert f.prefill_range[0] <= truth.prefill_mfu <= f.prefill_range[1], name
        assert f.overhead_range_s[0] <= truth.step_overhead_s <= f.overhead_range_s[1], name
        assert f.median_error < 0.05, name


def test_confirm_reads_a_compute_bound_replica(tmp_path):
    # the scrapes show ~64 running and 1-6 waiting while the cache holds ~64 × (1.2·1,800 + 0.6·260) ≈ 148k tokens of
    # ~421k, about 35%: compute binds. Copied in name order so their modification times are in time order whatever the
    # checkout did. The replica completes REPLICA_PEAK_RPS = 5 requests/s at 14:30 with log-normal outputs of mean
    # ≈ 260·e^{0.65²/2} ≈ 320 tokens (a little less, capped at 1,024): ~1,550 output tokens/s, ±20% for a minute's draws.
    from xlplan.evidence.confirm import evidence, verdict
    from xlplan.io.metrics import read_scrapes

    gen = _generator()
    paths = []
    for p in sorted((EXAMPLES / "scrapes").glob("vllm-*.prom")):
        paths.append(tmp_path / p.name)
        shutil.copyfile(p, paths[-1])
    e = evidence(read_scrapes(paths, gen.SCRAPE_INTERVAL_S))
    assert e.scrapes == gen.SCRAPES and e.seconds == gen.SCRAPE_INTERVAL_S * (gen.SCRAPES - 1) and e.notes == ()
    assert verdict(e)[0] == "compute"
    assert 0.25 < e.cache_p50 <= e.cache_p95 < 0.5 and e.preemptions_per_s == 0 and 60 <= e.running_p50 <= 66
    assert e.generation_tok_s == pytest.approx(gen.REPLICA_PEAK_RPS * 310, rel=0.2)


@pytest.mark.slow
def test_the_generator_reproduces_the_committed_files(tmp_path):
    import pandas as pd

    gen = _generator()
    written = {p.relative_to(tmp_path).as_posix() for p in gen.write(tmp_path)}
    committed = {p.relative_to(EXAMPLES).as_posix() for p in _example_files()}
    assert written == committed
    for rel in sorted(written):
        if rel.endswith(".parquet"):  # the footer names the pyarrow that wrote it: compare the table
            pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / rel), pd.read_parquet(EXAMPLES / rel))
        else:
            assert (tmp_path / rel).read_bytes() == (EXAMPLES / rel).read_bytes(), \
                f"examples/{rel} is not what examples/make_examples.py writes: run it again and commit the result"


def test_the_readmes_python_block_runs_and_prints_what_it_says(capsys):
    # the README's "From Python" block: every import is a real home, and the figures in its trailing comments are
    # what it prints (the Answer on the reference plan: 7 GPUs with redundancy, $15,330 a month, as the note says)
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
        said = [line.split("#", 1)[1].strip() for line in block.splitlines() if line.startswith("print(") and "#" in line]
        assert capsys.readouterr().out.split("\n")[: len(said)] == said
