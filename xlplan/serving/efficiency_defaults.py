"""The efficiencies a plan gets when it states none: fitted per GPU vendor and serving engine on the public corpus.

Prefill and decode MFU, bandwidth efficiency, the fixed time per step and the experts' efficiency come from
``xlplan/data/efficiencies.yaml`` (``scripts/fit_efficiencies.py`` over ``xlplan/data/measurements.csv``): the vendor ×
engine fit where it has enough runs, else the vendor's fit, else the fit over everything. The runbook's engine keeps
the runbook's figures (:data:`RUNBOOK_EFFICIENCIES`).

References
----------
Runbook, document 14, step 5 · "÷ 396 per GPU at 40% MFU". The public corpus, ``xlplan/data/measurements.csv``, each
row with its source.
"""

from __future__ import annotations

import functools
import re

from xlplan.catalog.specs import vendor

RUNBOOK_EFFICIENCIES = {"prefill_mfu": 0.40, "decode_mfu": 0.40, "bandwidth_efficiency": 0.60, "step_overhead_s": 0.0,
                        "expert_efficiency": 1.0}
"""The runbook's planning figures: 40% MFU, 60% of HBM bandwidth (measured 57-66%: measurements N01, G03), no step overhead."""

EFFICIENCY_FIELDS = ("prefill_mfu", "decode_mfu", "bandwidth_efficiency", "step_overhead_s", "expert_efficiency")


@functools.cache
def shipped_table() -> dict:
    """The fitted default-efficiency table as shipped: ``xlplan/data/efficiencies.yaml``, read once. [dict]

    Returns
    -------
    dict
        ``{'overall': {...}, 'vendors': {vendor: {'all': {...}, engine: {...}}}}`` as
        :func:`xlplan.evidence.calibrate.fit_defaults` writes it. Treat it as read-only: it is the one shared copy.

    References
    ----------
    ``xlplan/data/efficiencies.yaml``, fitted by ``scripts/fit_efficiencies.py`` to ``xlplan/data/measurements.csv``.
    """
    from importlib import resources

    import yaml

    return yaml.safe_load(resources.files("xlplan.data").joinpath("efficiencies.yaml").read_text(encoding="utf-8"))


def default_efficiencies(engine: str, gpu_name: str, table: dict | None = None) -> dict[str, float]:
    """The efficiencies a plan gets when it states none: fitted per vendor and engine on the public corpus.

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        The serving engine.
    gpu_name : str
        The GPU's display name; its vendor picks the fit (:func:`vendor`).
    table : dict, optional
        A fitted table in :func:`xlplan.evidence.calibrate.fit_defaults`' shape (a leave-one-source-out fold's, say); left out,
        :func:`shipped_table`.

    Returns
    -------
    dict of str to float
        By :data:`EFFICIENCY_FIELDS`: prefill_mfu, decode_mfu, bandwidth_efficiency and expert_efficiency as
        fractions, step_overhead_s in seconds. [fraction], [s]

    Notes
    -----
    ``xlplan/data/efficiencies.yaml``, written by ``scripts/fit_efficiencies.py`` from ``xlplan/data/measurements.csv``:
    each vendor × engine with enough measured runs has its own fit; otherwise the vendor's fit over all its engines,
    otherwise the fit over everything. The runbook's engine keeps the runbook's figures.

    References
    ----------
    Runbook, document 14, step 5 · "÷ 396 per GPU at 40% MFU" (the runbook engine's figures, :data:`RUNBOOK_EFFICIENCIES`).
    The public corpus, ``xlplan/data/measurements.csv``, each row with its source.
    """
    return default_efficiencies_for(engine, vendor(gpu_name), table)


VENDORS = ("nvidia", "amd", "intel")


def default_efficiencies_for(engine: str, v: str, table: dict | None = None) -> dict[str, float]:
    """:func:`default_efficiencies` by vendor name ('nvidia', 'amd', 'intel'). [fractions], [s]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        The serving engine.
    v : {'nvidia', 'amd', 'intel'}
        The GPU's vendor (:data:`VENDORS`).
    table : dict, optional
        The fitted table to read; left out, :func:`shipped_table`.

    Returns
    -------
    dict of str to float
        By :data:`EFFICIENCY_FIELDS`: prefill_mfu, decode_mfu, bandwidth_efficiency and expert_efficiency as
        fractions, step_overhead_s in seconds. [fraction], [s]

    References
    ----------
    ``xlplan/data/efficiencies.yaml``, fitted by ``scripts/fit_efficiencies.py`` to the public corpus
    ``xlplan/data/measurements.csv``, each row with its source.
    """
    if engine == "runbook":
        return dict(RUNBOOK_EFFICIENCIES)
    t = shipped_table() if table is None else table
    row = dict(t["overall"])
    row.update(t.get("vendors", {}).get(v, {}).get("all", {}))
    row.update(t.get("vendors", {}).get(v, {}).get(engine, {}))
    return {k: float(row[k]) for k in EFFICIENCY_FIELDS}


def fallback_note(engine: str, gpu_name: str, moe: bool, table: dict | None = None) -> str:
    """Which fit an engine's defaults borrow on a GPU's vendor, where the engine has too few runs of its own. [text]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        The serving engine.
    gpu_name : str
        The GPU's display name; its vendor picks the fit (:func:`vendor`).
    moe : bool
        Whether the model has experts (its expert efficiency then matters too).
    table : dict, optional
        The fitted table to read; left out, :func:`shipped_table`.

    Returns
    -------
    str
        Empty where the vendor × engine class has its own fit of every field the model uses (and for the runbook's
        engine); else e.g. "vllm on nvidia: 3 dense run(s), fewer than 4: nvidia's fit over all its engines is used". [text]

    References
    ----------
    ``xlplan/data/efficiencies.yaml`` (its ``dense_fallback`` and ``moe_fallback`` entries), fitted by
    ``scripts/fit_efficiencies.py`` to the public corpus ``xlplan/data/measurements.csv``.
    """
    if engine == "runbook":
        return ""
    t = shipped_table() if table is None else table
    v = vendor(gpu_name)
    vendors = t.get("vendors", {})
    entry = vendors.get(v, {}).get(engine)
    if entry is None:
        above = f"{v}'s fit over its other engines" if v in vendors else "the fit over every vendor"
        return f"{engine} on {v}: no fitted runs in the corpus, {above} is used"
    why = [entry[k] for k in ("dense_fallback", "moe_fallback") if k in entry and (moe or k == "dense_fallback")]
    return f"{engine} on {v}: " + "; ".join(why) if why else ""


CURRENT_SERIES = {"vllm": ((0, 8), "0.8 (the V1 engine) or later"), "sglang": ((0, 5), "0.5 or later")}
"""The engine releases the default efficiencies describe (a plan deploys today's engine): the earliest (major, minor)
fitted, and how it reads. Runs of earlier releases are validated but not fitted. [text]"""


def superseded_release(engine: str, version: str, v0: bool = False) -> str:
    """Why an engine release is older than the default efficiencies describe (:data:`CURRENT_SERIES`), or ''. [text]

    Parameters
    ----------
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        The serving engine.
    version : str
        Its version as stated ("v0.11.0", "0.4.3.post2 (image …)", "NIM 1.8.0"); empty when not stated.
    v0 : bool
        vLLM's V0 engine, as read from the text by whoever stated it.

    Returns
    -------
    str
        E.g. "SGLang 0.4.3, older than the releases the defaults are fitted on (0.5 or later)"; empty where the
        release is current, not stated, or of an engine whose releases all count (TensorRT-LLM). [text]

    References
    ----------
    vLLM 0.8.0 release notes (March 2025): the V1 engine the default. ``xlplan/data/efficiencies.yaml`` (its
    ``not_fitted`` rows), fitted by ``scripts/fit_efficiencies.py``.

    Examples
    --------
    >>> superseded_release("sglang", "v0.4.3.post2"), superseded_release("vllm", "vllm/vllm-openai:v0.11.0")
    ('SGLang 0.4.3, older than the releases the defaults are fitted on (0.5 or later)', '')
    """
    if engine not in CURRENT_SERIES:
        return ""
    first, reads = CURRENT_SERIES[engine]
    m = re.search(r"(?<![\d.])(\d+)\.(\d+)(\.\d+)?", version)  # 'v0.7.3', 'vllm-openai:v0.5.4', '0.4.3.post2'
    old = v0 if engine == "vllm" and v0 else bool(m) and (int(m.group(1)), int(m.group(2))) < first
    if not old:
        return ""
    name = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
    return f"{name} {m.group(0) if m else 'V0'}, older than the releases the defaults are fitted on ({reads})"
