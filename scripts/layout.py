"""Write the README's Layout section from the tree: every module with the summary line of its docstring.

    python scripts/layout.py           # print the section
    python scripts/layout.py --write   # replace README.md's text between <!-- layout:start --> and <!-- layout:end -->

Each folder that holds Python modules is a bullet, described by its ``__init__.py`` docstring (else by a fixed line
below), with one nested bullet per module: its path and the first paragraph of its docstring (the summary line,
joined where it wraps). A module without a docstring is an error (exit 1); an empty ``__init__.py`` is a package
marker and is left out. Other files in those folders, and folders without Python modules, get a fixed line kept
here in ``FIXED``; a file there without one is an error too, so a new data file is described when it lands.
The output is sorted and depends on nothing but the tree: ``__pycache__``, ``.venv``, egg-info and hidden
entries are never listed. ``tests/test_layout.py`` fails when README.md differs from it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- layout:start -->", "<!-- layout:end -->"

TOP = ("xlplan", "udfs", "tests", "benchmarks", "scripts", "workbook", "docs", "examples", ".ci")
"""The top-level folders described, in this order."""

SKIPPED = ("__pycache__", ".venv", ".git", ".hypothesis", ".pytest_cache", ".ruff_cache", "build", "dist")

FIXED = {
    # folders without an __init__.py docstring
    "xlplan/data": "Package data the engine reads: the reference plan, the fitted efficiencies, the public corpus, "
                   "AIConfigurator's silicon sample, API prices.",
    "udfs/lite": "The same Excel functions for xlwings Lite (Pyodide).",
    "tests": "The test suite: every expected number with its derivation or source in a comment.",
    "tests/data": "Copies of `shared/reference/models.csv` and `measurements-public.csv` (public figures, each row with "
                  "its source), so the catalog tests run on any clone.",
    "benchmarks": "Speed targets live here, never in timed tests; each script prints what it measured.",
    "scripts": "Maintenance scripts: regenerate README sections and fitted data, print health figures.",
    "workbook": "The committed template workbook.",
    "docs": "Published artefacts: the plan file's JSON Schema and the README's pictures.",
    "examples": "Sample files of every format `traffic`, `calibrate` and `confirm` read, and the script that writes them "
                "(the README's Sample files section runs each).",
    "examples/bench": "Benchmark results: `vllm bench serve --save-result`, a GuideLLM report, a genai-perf export.",
    "examples/logs": "Request logs: OpenAI usage JSON Lines (and .gz), LiteLLM spend logs, CSV, Parquet.",
    "examples/scrapes": "Prometheus scrapes of one vLLM replica's /metrics, 15 s apart.",
    "examples/review": "A month for `xlplan review` of the reference plan: its busiest minutes' log, scrapes at that peak, a benchmark.",
    "examples/review/bench": "The week's benchmark run, as `vllm bench serve --save-result` writes it.",
    "examples/review/scrapes": "Five scrapes of one replica at the month's peak, 15 s apart.",
    "examples/reference-plan.yaml": "The reference plan as `xlplan example` writes it, for `--plan`.",
    ".ci": "Continuous integration.",
    "benchmarks/battery": ("The configuration battery as plan files (issue 18's scenarios, its held-back cases and issue 48's "
                           "sixteen), written by battery_plans.py."),
    "benchmarks/bench_configurations.txt": ("The last run of bench_configurations.py: each battery plan's Answer (its "
                                            "setting, closed form against verified load, bill) beside the cheapest "
                                            "setting a brute-force search finds."),
    "benchmarks/bench_configurations_scaled.txt": ("The last run of bench_configurations_scaled.py: the battery's plans at "
                                                   "0.6 and 1.7 times their peak, held out, each Answer beside the brute "
                                                   "force."),
    "benchmarks/bench_routing.txt": ("The last run of bench_routing.py: each battery plan under 100 GPUs under each load "
                                     "balancer, the Answer's closed form against its verified load."),
    "benchmarks/bench_sampled.txt": ("The last run of bench_sampled.py: battery plans past 80 replicas, the fewest "
                                     "replicas found with every replica simulated and with the sample plan takes."),
    "benchmarks/bench_kernel_prefill.txt": ("The last run of bench_kernel_prefill.py: the sample's TTFT and inter-token "
                                            "latency and the corpus' offline throughput at the fitted prefill MFU and at "
                                            "the measured GEMM curve's."),
    "benchmarks/bench_kernel_step.txt": ("The last run of bench_kernel_step.py: the sample's inter-token latency (dense, MoE, MLA), "
                                         "the shipped model's replay beside the sum of measured kernels."),
    "benchmarks/bench_replay.txt": ("The last run of bench_replay.py: the replay's time per row and error beside the closed "
                                    "form's, and the harness assumptions' effects."),
    "benchmarks/bench_validate.txt": "The last run of bench_validate.py: validate on the whole silicon sample on one core.",
    "benchmarks/bench_random_workbooks.txt": "The last run of bench_random_workbooks.py: 40 drawn plans' workbooks in both "
                                             "spreadsheet engines.",
    "benchmarks/bench_review_alarms.txt": "The last run of bench_review_alarms.py: the review's false alarms over 200 "
                                          "months drawn at the plan's own peak.",
    # files that are not Python modules
    "xlplan/catalog/contracts.yaml": "Reserved, capacity-block and spot GPU prices beside the on-demand one, each with "
                                     "its provider, date and URL; none where none is published.",
    "xlplan/catalog/gpus.yaml": "GPUs: memory as the driver reports it, dense TFLOP/s by format, HBM bandwidth, "
                                "node size, prices, each with its source.",
    "xlplan/catalog/models.yaml": "Models: the config.json fields the planner needs, aliases and the published "
                                  "parameter count, each with its source.",
    "xlplan/catalog/ownership.yaml": "Owning instead of renting: dated, sourced defaults (depreciation, PUE, hosting) "
                                     "and per-GPU node prices and power.",
    "xlplan/data/api_prices.csv": "Managed-API prices by model size class, in USD per million tokens, each with its "
                                  "date and source.",
    "xlplan/data/efficiencies.yaml": "Default efficiencies by GPU vendor and serving engine, written by "
                                     "`scripts/fit_efficiencies.py`.",
    "xlplan/data/measurements.csv": "The public corpus: published measurements with their stated conditions and sources.",
    "xlplan/data/kernels": "Measured kernel efficiency curves (AIConfigurator's Apache-2.0 databases, reduced), with provenance.",
    "xlplan/data/kernels/README.md": "Where the kernel curves come from (repository, commit, paths, licence) and what each column means.",
    "xlplan/data/kernels/gemm.csv": "Achieved GEMM efficiency by GPU, dtype, tokens in the step and (n, k) shape.",
    "xlplan/data/kernels/attention.csv": "Attention prefill compute fraction and decode bandwidth fraction by context and batch.",
    "xlplan/data/kernels/moe.csv": "Grouped expert GEMM efficiency by tokens per expert.",
    "xlplan/data/kernels/sources.csv": "Every source database file the curves were reduced from, with its path in the repository.",
    "xlplan/data/reference.yaml": "The reference plan: the runbook's worked example.",
    "xlplan/data/mlperf_benchmarks.csv": "MLPerf Inference's LLM benchmarks as MLCommons defines them (model, dataset, "
                                         "mean output length, p99 latency limits), each with its source and a quote; "
                                         "never a submitted result",
    "xlplan/data/silicon_sample.csv.gz": "The second measured corpus: NVIDIA AIConfigurator's 5,221 end-to-end TTFT and "
                                         "TPOT points at stated layouts, reduced, each with the sample's id and its point.",
    "xlplan/data/silicon_sample.LICENSE": "The silicon sample's licence: Apache License 2.0, from the AIConfigurator repository.",
    "xlplan/data/silicon_sample.md": "Where the silicon sample comes from (repository, commit, path, licence), what was "
                                     "reduced, each column and the layout grammar.",
    "udfs/lite/requirements.txt": "What xlwings Lite installs into Pyodide (its requirements.txt tab).",
    "workbook/capacity-plan.xlsx": "The template with the reference inputs, regenerated by `xlplan template`, "
                                   "checked by `xlplan template --check`.",
    "docs/plan.schema.json": "The JSON Schema of plan files, regenerated by `xlplan schema -o docs/plan.schema.json --force`.",
    "docs/workbook/": "One PNG per sheet of the reference workbook (`scripts/render_workbook_pictures.py`).",
    "docs/simulate/": "The picture of the simulated reference fleet.",
    ".ci/run": "What CI runs: LibreOffice, the README's test command and main job, the template and bomb checks.",
}
"""Fixed one-line descriptions: folders without a package docstring, and every file that is not a Python module."""

NO_DOCSTRING: dict[str, str] = {}
"""Modules described here because they have no docstring yet (a docstring wins); give the module one, then delete
its entry."""


class LayoutError(Exception):
    """Something in the tree the section cannot describe: a module without a docstring, a file without a line."""


def _skipped(path: Path) -> bool:
    name = path.name
    return name in SKIPPED or name.endswith(".egg-info") or (name.startswith(".") and path.parent != ROOT)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _markdown(text: str) -> str:
    """A docstring's reST as Markdown: ``x`` and :role:`~a.b.c` become `x` and `c` (reST's "`c` s" plural, `c`s)."""
    text = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?(\w+)`(?: (s)\b)?", r"`\1`\2", text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def summary(path: Path) -> str | None:
    """The first paragraph of a module's docstring on one line, as Markdown; None when it has none."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    if not doc or not doc.strip():
        return None
    first = doc.strip().split("\n\n", 1)[0]
    return _markdown(" ".join(first.split()))


def _module_line(path: Path, problems: list[str]) -> str | None:
    rel = _rel(path)
    text = summary(path)
    if text is None:  # a docstring, once the module has one, wins over its NO_DOCSTRING entry
        text = NO_DOCSTRING.get(rel)
    if text is None:
        problems.append(f"{rel} has no module docstring: give it one (its first line is its line in the README's Layout)")
        return None
    return f"  - `{rel}` — {text}"


def _fixed(key: str, problems: list[str]) -> str:
    if key not in FIXED:
        problems.append(f"{key} has no description: add it to FIXED in scripts/layout.py")
        return "?"
    return FIXED[key]


def _has_python(folder: Path) -> bool:
    return any(p.suffix == ".py" for p in folder.iterdir() if p.is_file())


def _python_folder(folder: Path, problems: list[str]) -> list[str]:
    """The folder's bullet, its modules and other files, then its subfolders' groups."""
    rel = _rel(folder)
    entries = sorted((p for p in folder.iterdir() if not _skipped(p)), key=lambda p: p.name)
    init = folder / "__init__.py"
    head = summary(init) if init.is_file() else None
    lines = [f"- `{rel}/` — {head if head is not None else _fixed(rel, problems)}"]
    subfolders = []
    for p in entries:
        if p.is_dir():
            if _has_python(p):
                subfolders.append(p)
            else:
                lines.append(f"  - `{_rel(p)}/` — {_fixed(_rel(p), problems)}")
        elif p.suffix == ".py":
            if p.name == "__init__.py" and (head is not None or not p.read_text(encoding="utf-8").strip()):
                continue  # described the folder, or an empty package marker
            line = _module_line(p, problems)
            if line is not None:
                lines.append(line)
        else:
            lines.append(f"  - `{_rel(p)}` — {_fixed(_rel(p), problems)}")
    for sub in subfolders:
        lines.extend(_python_folder(sub, problems))
    return lines


def _other_folder(folder: Path, problems: list[str]) -> list[str]:
    """A folder without Python modules: its fixed line, and the fixed lines of what is named beneath it."""
    rel = _rel(folder)
    lines = [f"- `{rel}/` — {_fixed(rel, problems)}"]
    for key in sorted(k for k in FIXED if k.startswith(rel + "/")):
        if not (ROOT / key).exists():
            problems.append(f"{key} is described in FIXED (scripts/layout.py) but does not exist")
        lines.append(f"  - `{key}` — {FIXED[key]}")
    return lines


def generate() -> str:
    """The Layout section's body, one line per module.

    Raises
    ------
    LayoutError
        Naming every module without a docstring and every file or folder without a fixed line.
    """
    problems: list[str] = []
    lines: list[str] = []
    for name in TOP:
        folder = ROOT / name
        if not folder.is_dir():
            problems.append(f"{name}/ is listed in TOP (scripts/layout.py) but does not exist")
            continue
        lines.extend(_python_folder(folder, problems) if _has_python(folder) else _other_folder(folder, problems))
    if problems:
        raise LayoutError("\n".join(problems))
    return "\n".join(lines) + "\n"


def readme_section(text: str) -> str:
    """What README.md holds between the layout markers (the markers' own lines aside)."""
    if START not in text or END not in text:
        raise LayoutError(f"README.md has no {START} … {END} markers around its Layout section")
    return text.split(START, 1)[1].split(END, 1)[0].removeprefix("\n")


def write(text: str, body: str) -> str:
    """README text with the section between the markers replaced by ``body``."""
    readme_section(text)  # the markers are there
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{START}\n{body}{END}{after}"


def main(argv: list[str]) -> int:
    try:
        body = generate()
        if "--write" in argv:
            text = README.read_text(encoding="utf-8")
            new = write(text, body)
            if new != text:
                README.write_text(new, encoding="utf-8")
            print(f"wrote the Layout section into {README} ({body.count(chr(10))} lines)")
        else:
            sys.stdout.write(body)
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
