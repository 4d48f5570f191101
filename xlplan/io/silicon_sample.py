"""AIConfigurator's silicon sample at the edge: each measured end-to-end point read into xlplan's names.

The second measured corpus: ``xlplan/data/silicon_sample.csv.gz``, NVIDIA AIConfigurator's ``silicon_sample.csv``
(Apache-2.0) reduced by ``scripts/reduce_silicon_sample.py``, whose docstring and ``xlplan/data/silicon_sample.md``
state every column and the layout grammar. Each row becomes a :class:`xlplan.evidence.validation.MeasuredRow`, the
type the measurements corpus (:mod:`xlplan.io.measurements`) is read into, so validation takes either or both.

An aggregated row's layout is AIConfigurator's: one worker of ``tp × pp × attention_dp`` GPUs, the attention in
``attention_dp`` ranks of ``tp`` GPUs, an MoE's experts over ``moe_tp × moe_ep`` of the same GPUs. In xlplan's names
(:class:`xlplan.evidence.bench_conditions.Conditions`) that is one replica of ``tp × attention_dp`` GPUs, expert
parallel ``moe_ep`` (an MoE only), attention data parallel where ``attention_dp`` > 1, at the row's concurrency
(requests in flight in the whole system). A row xlplan cannot read gets no conditions and a ``why`` that names the
column and its value: an unknown model or GPU, a layout xlplan does not model (pipeline parallel; attention
data-parallel ranks of more than one GPU), a layout that contradicts itself, or a disaggregated row (prefill and
decode on separate workers, a later issue's). The sample states no engine settings beyond the layout and the batch,
and no KV-cache format: each engine's defaults are taken, as for a corpus row whose settings state nothing else,
and the cache's format by xlplan's rule for an unstated one (:func:`xlplan.io.names.kv_dtype`).
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

from xlplan import catalog
from xlplan.evidence import bench_conditions
from xlplan.evidence.validation import MeasuredRow
from xlplan.io import layouts, names
from xlplan.io.measurements import source_group

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "silicon_sample.csv.gz"
"""The reduced sample that ships with xlplan (every row with the sample's id, and its point)."""
SOURCE = ("https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/"
          "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv")
"""Where the sample was reduced from: repository, commit and path. [text]"""
CATEGORY = "online_latency"
"""Every row is TTFT and TPOT at a fixed concurrency: the corpus' category for that. [text]"""


def read_sample(path: str | Path = SAMPLE) -> list[dict]:
    """The reduced sample's rows as text, column name to cell (a ``.gz`` path is gunzipped).

    Parameters
    ----------
    path : str or Path
        The reduced CSV; left out, the one that ships. [text]

    Returns
    -------
    list of dict
        Every row, in the file's order. [—]
    """
    data = Path(path).read_bytes()
    text = (gzip.decompress(data) if str(path).endswith(".gz") else data).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _int(cell: str) -> int | None:
    return int(cell) if str(cell or "").strip() else None


def conditions(row: dict) -> tuple[bench_conditions.Conditions | None, str]:
    """A reduced row's conditions in xlplan's names, or (None, why) naming the column and its value.

    Parameters
    ----------
    row : dict
        One row of the reduced sample (:func:`read_sample`), column name to text. [text]

    Returns
    -------
    tuple
        ``(Conditions, '')``, or ``(None, why)``. [—]
    """
    if row["mode"] != "agg":
        return None, f"mode {row['mode']!r}: prefill and decode on separate workers are not modelled"
    key = names.model_key(row["model"])
    if key is None:
        return None, f"model {row['checkpoint']!r} is not in the catalog"
    model = catalog.get_model(key)
    gpu, why = names.gpu_key(row["gpu"])
    if gpu is None:
        return None, why
    eng = names.engine(row["engine"])
    if eng is None:
        return None, f"engine {row['engine']!r} is not vLLM, SGLang or TensorRT-LLM"
    width, ep, attention_dp, replicas, why = layouts.in_xlplan_names(layouts.from_cells(row) or layouts.Layout(),
                                                                     bool(model.num_experts))
    if why:
        return None, why
    conc, client = _int(row["concurrency"]), _int(row["client_concurrency"])
    if client is not None and client != conc:
        return None, (f"concurrency {conc} (batch × attention_dp) is not client_concurrency {client}: the layout does "
                      "not account for the requests the client kept in flight")
    wd = row["weights_dtype"]
    return bench_conditions.Conditions(
        model=model, gpu=catalog.get_gpu(gpu), weights_dtype=wd, kv_dtype=names.kv_dtype("", row["checkpoint"], eng, "", wd),
        gpus=width * replicas, tp=width, ep=ep, engine=eng,
        isl=float(row["isl"]), osl=float(row["osl"]), concurrency=float(conc), attention_dp=attention_dp,
        engine_version=row["engine_version"],
    ), ""


def measured_row(row: dict) -> MeasuredRow:
    """One reduced row as xlplan reads it: its conditions (or why not), concurrency, TTFT and TPOT.

    Parameters
    ----------
    row : dict
        One row of the reduced sample (:func:`read_sample`), column name to text. [text]

    Returns
    -------
    MeasuredRow
        The row in xlplan's names, for :mod:`xlplan.evidence.validation`: the sample's id, its point, the
        sample's source group (one repository, what leave-one-source-out leaves out together). [—]
    """
    c, why = conditions(row)
    conc = _int(row["concurrency"])
    return MeasuredRow(
        id=row["id"], category=CATEGORY, source=source_group(SOURCE), conditions=c, why=why,
        concurrency=float(conc) if conc is not None else None,
        concurrency_why="" if conc is not None else "concurrency: not stated for a disaggregated row",
        itl_ms=float(row["tpot_ms"]), ttft_ms=float(row["ttft_ms"]), point=row["point"])


def measured_rows(rows: list[dict]) -> list[MeasuredRow]:
    """Every row as :func:`measured_row` reads it, in order.

    Parameters
    ----------
    rows : list of dict
        Rows of the reduced sample (:func:`read_sample`).

    Returns
    -------
    list of MeasuredRow
        The rows in xlplan's names. [—]
    """
    return [measured_row(r) for r in rows]
