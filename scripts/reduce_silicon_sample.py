"""Reduce NVIDIA AIConfigurator's measured end-to-end silicon sample to ``xlplan/data/silicon_sample.csv.gz``.

    python scripts/reduce_silicon_sample.py [GIT_DIR] [--commit REV] [--path PATH] [--out FILE]

``GIT_DIR`` is a clone (or bare mirror) of https://github.com/ai-dynamo/aiconfigurator (default: the session mirror,
``MIRROR``); the sample is read with ``git show REV:PATH`` (default ``COMMIT`` and ``PATH``), so what was read is
exactly a commit's file. Standard library and xlplan only; ``tests/test_silicon_sample.py`` re-runs the reduction
wherever the mirror is and compares it with the shipped file row for row. ``xlplan/data/silicon_sample.md`` says
what each column means; :mod:`xlplan.io.silicon_sample` reads the result.

Every source row is kept, in the source's order: 5,221 rows, 3,619 aggregated (``agg``) and 1,602 disaggregated
(``disagg``, a later issue's, kept with their stage layouts). What changes is the naming, not the content:

- **Provenance**: the sample's ``id`` (unique in the source), and from its ``silicon_data_source`` the ``config_id``
  and the ``measured`` date where stated (blank where not). The rest of that cell (dump file, workflow run, image)
  stays in the source, found by ``id``.
- **Names**: ``system`` → ``gpu``, xlplan's catalog key (``SYSTEMS``); ``model_path`` → ``checkpoint`` as stated and
  ``model``, the catalog key its alias lookup gives (:func:`xlplan.io.names.model_key`), else the Hugging Face id
  itself; ``backend`` → ``engine``; ``backend_version`` → ``engine_version`` as stated (blank in 868 rows).
- **Weights**: ``weights_dtype`` in xlplan's names from ``moe_quant_mode`` (the experts hold most of an MoE's bytes),
  else ``gemm_quant_mode``, by ``QUANT``; both stated must name one format, and ``precision`` must agree with it
  (``PRECISION``), else the script stops. A checkpoint that ships another 4-bit float format than the label says is
  read as its own (``CHECKPOINT_FP4``: ``openai/gpt-oss-120b`` ships MXFP4 experts, which AIConfigurator's own
  checkpoint inference also reads as ``w4a16_mxfp4``, ``aic-core/src/aiconfigurator_core/sdk/models/helpers.py:618``).
  The quantisation modes are kept as stated (``gemm_quant``, ``moe_quant``). The KV cache's format is not stated by
  the sample and is not written: the reader applies xlplan's rule for an unstated cache.
- **Layout**, AIConfigurator's grammar, in columns (source: ``aic-core/src/aiconfigurator_core/sdk/config.py`` at
  ``COMMIT``):

  - one worker occupies ``tp × pp × attention_dp`` GPUs (``total_gpus_per_worker``, config.py:142; context
    parallelism, ``cp_size``, is 1 throughout the sample);
  - the attention runs ``attention_dp`` data-parallel ranks of ``tp`` tensor-parallel GPUs each, and for an MoE the
    experts fill the same width: ``tp × attention_dp = moe_tp × moe_ep`` (config.py:94 and :121-127), one of the
    two inferred from the other where it is not set (config.py:97-116);
  - ``batch_size`` is per attention-DP rank, and the whole worker's concurrency is ``batch_size × pp ×
    attention_dp`` (``aic-core/src/aiconfigurator_core/sdk/backends/base_backend.py:1362-1364``; the inverse in
    ``src/aiconfigurator/sdk/config_adapter/dynamo_ci.py:206-211``, batch = concurrency ÷ (replicas ×
    attention DP));
  - an aggregated row is one worker: ``replicas`` is 1, and its ``concurrency`` (requests in flight in the whole
    system, xlplan's meaning) is ``batch_size × pp × attention_dp``;
  - a blank ``attention_dp_size`` or ``pp_size`` is AIConfigurator's default, 1 (config.py:28;
    ``src/aiconfigurator/cli/api.py:978``; ``tools/accuracy_regression_testing/predict_silicon_sample.py:39``
    passes only the fields a row fills); a ``moe_tp_size`` or ``moe_ep_size`` of 0 is "not set" (config.py:26-27,
    ``None``) and written blank; anything else is written as stated, a 0 attention DP included (AIConfigurator
    refuses it, config.py:87).

  ``client_concurrency`` is the ``silicon_concurrency`` the provenance states: what the benchmark client kept in
  flight. It disagrees with ``concurrency`` on 32 aggregated rows; both are kept, and the reader says so.
  A disaggregated row's prefill and decode stages are written in ``prefill_*`` and ``decode_*`` columns in the same
  grammar (``*_batch`` per attention-DP rank as stated, blank in 1,328 rows; ``*_replicas`` the stage's workers).
- **Repeats**: rows whose every kept condition column is the same (they differ only in provenance and measured
  figures) are repeats of one configuration and share a ``point`` id, ``p0001`` … in order of first appearance.
- **Figures**: ``silicon_ttft_ms`` → ``ttft_ms`` and ``silicon_tpot_ms`` → ``tpot_ms``, rounded to 0.001 ms.

The file is gzipped (``mtime`` 0, so the same rows give the same bytes): the plain CSV is about 1.2 MB, the gzipped one
well under the 250 kB budget ``xlplan/data/silicon_sample.md`` states for the wheel.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xlplan.io import names  # noqa: E402  (after the path set-up, so the checkout's copy is the one read)

MIRROR = Path("/work/.mirror/ai-dynamo+aiconfigurator/repo")
"""Where this project's sessions keep a mirror of ai-dynamo/aiconfigurator (absent elsewhere)."""
COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
PATH = "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
OUT = ROOT / "xlplan" / "data" / "silicon_sample.csv.gz"

SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200",
           "gb300": "gb300"}
"""AIConfigurator system → xlplan catalog GPU key (a system not here is written as stated)."""
QUANT = {"": "bf16", "bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp8_static": "fp8", "nvfp4": "nvfp4",
         "int4_wo": "int4", "w4a16_mxfp4": "mxfp4"}
"""AIConfigurator GEMM / MoE quantisation mode → xlplan weight dtype (blank: no quantisation, the bf16 checkpoint;
block-scaled fp8 is fp8 to the byte; int4 weight-only is int4)."""
PRECISION = {"": "bf16", "bf16": "bf16", "fp8": "fp8", "fp4": "nvfp4", "int4": "int4"}
"""The sample's ``precision`` label → the weight dtype it must agree with."""
CHECKPOINT_FP4 = {"openai/gpt-oss-120b": "mxfp4"}
"""Checkpoints whose 4-bit float weights are another format than the ``nvfp4`` label: the checkpoint's own."""

LAYOUT = ("tp", "pp", "attention_dp", "moe_tp", "moe_ep")
STAGE = (*LAYOUT, "batch", "replicas")
COLUMNS = ("id", "config_id", "measured", "point", "mode", "engine", "engine_version", "checkpoint", "model", "gpu",
           "gemm_quant", "moe_quant", "weights_dtype", "isl", "osl", *LAYOUT, "replicas", "concurrency",
           "client_concurrency", *(f"{s}_{c}" for s in ("prefill", "decode") for c in STAGE), "ttft_ms", "tpot_ms")
PROVENANCE = ("id", "config_id", "measured")
MEASURED = ("ttft_ms", "tpot_ms")
CONDITION = tuple(c for c in COLUMNS if c not in (*PROVENANCE, "point", *MEASURED))
"""The columns a repeat shares with the rows of its point."""


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def read_source(repo: Path = MIRROR, commit: str = COMMIT, path: str = PATH) -> list[dict]:
    """The sample's rows as text, column name to cell, from ``git show commit:path``."""
    text = _git(repo, "show", f"{commit}:{path}").decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _provenance(cell: str, key: str) -> str:
    """One ``key=value`` of the ``silicon_data_source`` cell ('' where not stated)."""
    m = re.search(rf"(?:^|;)\s*{key}=([^;]*)", cell)
    return m.group(1).strip() if m else ""


def _weights(row: dict) -> str:
    """The weight dtype in xlplan's names, from the quantisation modes, checked against the precision label."""
    gemm, moe = QUANT[row["gemm_quant_mode"]], QUANT[row["moe_quant_mode"]]
    if row["gemm_quant_mode"] and row["moe_quant_mode"] and gemm != moe:
        raise ValueError(f"{row['id']}: gemm_quant_mode {row['gemm_quant_mode']!r} and moe_quant_mode "
                         f"{row['moe_quant_mode']!r} name two weight formats")
    dtype = moe if row["moe_quant_mode"] else gemm
    if PRECISION[row["precision"]] != dtype:
        raise ValueError(f"{row['id']}: precision {row['precision']!r} disagrees with the quantisation modes ({dtype})")
    return CHECKPOINT_FP4.get(row["model_path"], dtype) if dtype == "nvfp4" else dtype


def _layout(row: dict, prefix: str = "") -> dict:
    """tp, pp, attention_dp, moe_tp, moe_ep of one worker (a blank pp or attention DP is 1; a MoE size of 0 is blank)."""
    out = {}
    for ours, theirs in zip(LAYOUT, ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")):
        cell = row[prefix + theirs].strip()
        if ours in ("pp", "attention_dp"):
            out[ours] = cell or "1"
        else:
            out[ours] = "" if cell in ("", "0") else cell
    return out


def reduce_row(row: dict) -> dict:
    """One source row in the reduced columns (``point`` left blank; :func:`reduce_rows` numbers the points)."""
    cell = row["silicon_data_source"]
    client = _provenance(cell, "silicon_concurrency")
    measured = _provenance(cell, "measured")[:10]
    out = {"id": row["id"], "config_id": _provenance(cell, "config_id"), "measured": measured, "point": "",
           "mode": row["mode"], "engine": row["backend"], "engine_version": row["backend_version"].strip(),
           "checkpoint": row["model_path"], "model": names.model_key(row["model_path"]) or row["model_path"],
           "gpu": SYSTEMS.get(row["system"], row["system"]), "gemm_quant": row["gemm_quant_mode"],
           "moe_quant": row["moe_quant_mode"], "weights_dtype": _weights(row), "isl": row["isl"], "osl": row["osl"],
           "client_concurrency": client, "ttft_ms": f"{float(row['silicon_ttft_ms']):.3f}",
           "tpot_ms": f"{float(row['silicon_tpot_ms']):.3f}"}
    out |= dict.fromkeys((*LAYOUT, "replicas", "concurrency"), "")
    out |= dict.fromkeys((f"{s}_{c}" for s in ("prefill", "decode") for c in STAGE), "")
    if row["mode"] == "agg":
        layout = _layout(row)
        out |= layout | {"replicas": "1",
                         "concurrency": str(int(row["batch_size"]) * int(layout["pp"]) * int(layout["attention_dp"]))}
    else:
        for stage in ("prefill", "decode"):
            layout = _layout(row, f"{stage}_")
            out |= {f"{stage}_{k}": v for k, v in layout.items()}
            out |= {f"{stage}_batch": row[f"{stage}_batch_size"], f"{stage}_replicas": row[f"{stage}_num_workers"]}
    return out


def reduce_rows(rows: list[dict]) -> list[dict]:
    """Every source row reduced, in order, each repeat carrying its point's id (``p0001`` … by first appearance)."""
    out, points = [], {}
    for row in rows:
        r = reduce_row(row)
        key = tuple(r[c] for c in CONDITION)
        r["point"] = points.setdefault(key, f"p{len(points) + 1:04d}")
        out.append(r)
    return out


def csv_text(rows: list[dict]) -> str:
    """The reduced rows as CSV text (``\\n`` line ends), header first."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def gzipped(text: str) -> bytes:
    """The text gzipped with no name and time 0 in the header, so the same rows give the same bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9, mtime=0, filename="") as f:
        f.write(text.encode("utf-8"))
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", nargs="?", type=Path, default=MIRROR, help="git directory of ai-dynamo/aiconfigurator")
    ap.add_argument("--commit", default=COMMIT)
    ap.add_argument("--path", default=PATH, help="the sample's path in the repository")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    rows = reduce_rows(read_source(a.repo, a.commit, a.path))
    text = csv_text(rows)
    a.out.write_bytes(gzipped(text))
    print(f"{len(rows):,} rows, {len({r['point'] for r in rows}):,} points: {len(text.encode()):,} bytes of CSV, "
          f"{a.out.stat().st_size:,} gzipped in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
