"""Accuracy on the public corpus: xlplan's median errors, and NVIDIA AIConfigurator's on the same rows where installed.

    .venv/bin/python benchmarks/bench_accuracy.py                    # xlplan alone
    AICONFIGURATOR=/path/to/bin/aiconfigurator .venv/bin/python benchmarks/bench_accuracy.py ROWS.csv   # side by side

The side-by-side runs only on a file of rows outside both corpora (ROWS.csv, the corpus' columns): a row of
xlplan/data/measurements.csv is in-sample to xlplan, a configuration of AIConfigurator's silicon sample is its own
measured data, so neither is a fair ground for comparing the two. Rows of the file whose id is a corpus row's are left
out of the comparison.

xlplan predicts every row of xlplan/data/measurements.csv from its stated conditions with efficiencies fitted without
the row's own source (leave one source out: the headline, the honest figure) and, beside it, with the shipped default
efficiencies (in-sample: the defaults are fitted to this corpus). It then scores calibration as a user meets it: within
each deployment (same GPU, model and engine) one run calibrates and each other run is predicted, and all runs but one
calibrate and the one is predicted, each against the defaults. AIConfigurator (pip install aiconfigurator; an optional extra, never run
in CI) is asked for the same rows through its CLI — `aiconfigurator cli estimate --estimate-mode agg` at the row's
model, system, backend, lengths, TP and quantisation, at the batch the row runs (its concurrency per replica; offline,
the batch xlplan derives from the engine's caps, which is stated in the output) — where it supports the model and the
system; throughput = replicas × its tokens/s. Only rows both predict enter the side-by-side medians.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from xlplan.evidence.validation import headline, predict_row
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, measured_row
from xlplan.report.validation_report import build, current, summary_lines

SYSTEMS = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200", "a100-80gb": "a100_sxm",
           "l40s": "l40s", "l4": "l4", "h100-pcie": "h100_pcie", "rtx-pro-6000": "rtx_pro_6000_server", "b300": "b300_sxm"}
GEMM = {"bf16": "bfloat16", "fp8": "fp8", "nvfp4": "nvfp4", "fp4": "nvfp4", "int4": "int4_wo", "mxfp4": "bfloat16"}
MOE = {"bf16": "bfloat16", "fp8": "fp8", "nvfp4": "nvfp4", "fp4": "nvfp4", "mxfp4": "w4a16_mxfp4", "int4": "int4_wo"}


def aiconfigurator() -> str | None:
    return os.environ.get("AICONFIGURATOR") or shutil.which("aiconfigurator")


def _aic_model(c) -> str | None:
    """AIConfigurator's model path for a catalog model (its bundled configs are keyed by Hugging Face id)."""
    hf = c.model.hf_id or ""
    known = {"meta-llama/Llama-3.1-8B": "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-70B-Instruct": "meta-llama/Meta-Llama-3.1-70B",
             "meta-llama/Llama-3.1-405B-Instruct": "meta-llama/Meta-Llama-3.1-405B"}
    return known.get(hf, hf) or None


def aic_predict(binary: str, row: dict, c, batch: float) -> dict | None:
    """AIConfigurator's TTFT [s], TPOT [s] and whole-system tokens/s for the row, or None where unsupported."""
    system, model = SYSTEMS.get(_gpu_key(c)), _aic_model(c)
    if system is None or model is None or c.engine not in ("trtllm", "vllm", "sglang"):
        return None
    cmd = [binary, "cli", "estimate", "--model-path", model, "--system", system, "--backend", c.engine,
           "--isl", str(int(c.isl)), "--osl", str(int(c.osl)), "--batch-size", str(max(1, int(round(batch)))),
           "--tp-size", str(c.tp), "--estimate-mode", "agg", "--gemm-quant-mode", GEMM.get(c.weights_dtype, "bfloat16"),
           "--kvcache-quant-mode", "fp8" if c.kv_dtype == "fp8" else "bfloat16"]
    if c.model.num_experts:
        cmd += ["--moe-quant-mode", MOE.get(c.weights_dtype, "bfloat16"), "--moe-ep-size", str(c.ep), "--moe-tp-size", str(c.tp // c.ep)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    except subprocess.TimeoutExpired:
        return None
    ttft, tpot, tok = (re.search(rf"{k}:\s+([\d,.]+)", out) for k in ("TTFT", "TPOT", r"tokens/s"))
    if not (ttft and tpot and tok):
        return None
    return {"ttft_s": float(ttft.group(1).replace(",", "")) / 1e3, "itl_s": float(tpot.group(1).replace(",", "")) / 1e3,
            "output_tok_s": float(tok.group(1).replace(",", "")) * c.replicas}


def _gpu_key(c) -> str:
    from xlplan import catalog

    return catalog.gpu_key(c.gpu.name)


def main(argv: list[str]) -> None:
    t = time.perf_counter()
    rows = read_measurements(CORPUS)
    report = build(rows)
    checks = report.in_sample
    print(f"xlplan on {CORPUS.name}: {len(rows)} rows, {len({c.id for c in checks if not c.skipped})} predicted "
          f"({time.perf_counter() - t:.2f} s)")
    for line in summary_lines(report):
        print("  " + line)
    print(f"  (in-sample throughput and latency, current releases, not the headline: {headline(current(report, checks)):.1%})")
    binary = aiconfigurator()
    if binary is None:
        print("AIConfigurator not installed (pip install aiconfigurator, or AICONFIGURATOR=path): side-by-side skipped")
        return
    if not argv:
        print("side-by-side skipped: it runs on rows outside both corpora only (give their CSV)")
        return
    corpus_ids = {r["id"] for r in rows}
    rows = [r for r in read_measurements(argv[0]) if r["id"] not in corpus_ids]
    from xlplan.io.measurements import conditions
    from xlplan.io.names import concurrency as _concurrency

    ours, theirs = [], []
    for row in rows:
        checks_row = [c for c in predict_row(measured_row(row)) if not c.skipped and c.kind in ("throughput", "latency")]
        if not checks_row:
            continue
        c, _ = conditions(row)
        conc = _concurrency(str(row.get("concurrency_or_rate") or ""))[0]
        batch = conc / c.replicas if conc else float(re.search(r"batch ([\d,.]+)", checks_row[0].note).group(1).replace(",", ""))
        aic = aic_predict(binary, row, c, batch)
        if aic is None:
            continue
        for ck in checks_row:
            key = "output_tok_s" if ck.kind == "throughput" else "itl_s"
            measured = ck.measured if key == "output_tok_s" else ck.measured / 1e3
            ours.append(abs(ck.relative_error))
            theirs.append(abs(aic[key] / measured - 1.0))
            print(f"  {ck.id:6s} {ck.metric[:24]:24s} xlplan {ck.relative_error:+7.1%}   AIConfigurator {aic[key] / measured - 1.0:+7.1%}")
    if ours:
        print(f"on the {len(ours)} checks both predict: median |error| xlplan {statistics.median(ours):.1%}, "
              f"AIConfigurator {statistics.median(theirs):.1%}")
    else:
        print("AIConfigurator predicted none of the rows")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
