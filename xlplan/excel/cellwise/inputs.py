"""What the spreadsheet functions read: catalog specs and fields, parameter counts, a length distribution's fitted mean.

Part of :mod:`xlplan.excel.cellwise`: the look-ups the other cell functions
build on, so a cell that names a model or a GPU sees the catalog's figures.

References
----------
Runbook, document 14, "From a forecast to a purchase order", step 3 (lengths as percentiles).
"""

from __future__ import annotations

from xlplan import catalog, distributions
from xlplan.catalog import parameters
from xlplan.catalog.specs import GPUSpec, ModelSpec


def model_spec(model: str | ModelSpec) -> ModelSpec:
    """A model spec, or the catalog's for a name. [ModelSpec]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.

    Returns
    -------
    ModelSpec
        ``model`` itself, or the catalog's spec of that name (:func:`xlplan.catalog.get_model`).
    """
    return model if isinstance(model, ModelSpec) else catalog.get_model(model)


def gpu_spec(gpu: str | GPUSpec) -> GPUSpec:
    """A GPU spec, or the catalog's for a name. [GPUSpec]

    Parameters
    ----------
    gpu : str or GPUSpec
        Catalog GPU name or alias (e.g. 'h100-sxm'), or a GPU spec.

    Returns
    -------
    GPUSpec
        ``gpu`` itself, or the catalog's spec of that name (:func:`xlplan.catalog.get_gpu`).
    """
    return gpu if isinstance(gpu, GPUSpec) else catalog.get_gpu(gpu)


def mean_length(p50: float, p95: float, p99: float | None = None) -> float:
    """Mean of the lognormal fitted through the percentiles: shown, never entered. [tokens]

    Parameters
    ----------
    p50 : float
        Median length. [tokens]
    p95 : float
        95th-percentile length, at least ``p50``. [tokens]
    p99 : float, optional
        99th-percentile length, at least ``p95``; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        ``E[n]`` of the lognormal fitted through the percentiles (:func:`xlplan.distributions.length_moments`). [tokens]
    """
    return distributions.length_moments(p50, p95, p99)[0]


def params(model: str | ModelSpec, which: str = "total") -> int:
    """Parameters derived from the config: 'total' (in memory) or 'active' (per token). [parameters]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    which : {'total', 'active'}
        'total' counts every parameter held in memory; 'active' those one token passes through (MoE).

    Returns
    -------
    int
        Parameters counted layer by layer from the config. [parameters]
    """
    m = model_spec(model)
    if which == "total":
        return parameters.total_params(m)
    if which == "active":
        return parameters.active_params(m)
    raise ValueError(f"which: got {which!r}; expected 'total' or 'active'")


def gpu_field(name: str, field: str):
    """One field of a catalog GPU, e.g. 'memory_gib' or 'bf16_tflops'. [field's unit]

    Parameters
    ----------
    name : str
        Catalog GPU name or alias, e.g. 'h100-sxm'.
    field : str
        A :class:`~xlplan.catalog.specs.GPUSpec` field, e.g. 'memory_gib', 'bf16_tflops', 'hbm_tbps'.

    Returns
    -------
    float, int, str or None
        The field's value as the catalog holds it; None where the GPU has no such figure. [the field's unit]
    """
    g = catalog.get_gpu(name)
    if field not in type(g).model_fields:
        raise ValueError(f"field: got {field!r}; expected one of {', '.join(type(g).model_fields)}")
    return getattr(g, field)


MODEL_DERIVED_FIELDS = ("total_params", "active_params")


def model_field(name: str, field: str):
    """One field of a catalog model (config.json names), or a derived 'total_params' / 'active_params'. [field's unit]

    Parameters
    ----------
    name : str
        Catalog model name, Hugging Face id or alias.
    field : str
        A :class:`~xlplan.catalog.specs.ModelSpec` field (config.json names, e.g. 'num_hidden_layers'), or one of
        :data:`MODEL_DERIVED_FIELDS`.

    Returns
    -------
    float, int, str or None
        The field's value as the catalog holds it, or the derived count; None where the model has no such figure.
        [the field's unit]
    """
    m = catalog.get_model(name)
    if field in MODEL_DERIVED_FIELDS:
        return params(m, field.split("_", 1)[0])
    if field not in type(m).model_fields:
        raise ValueError(f"field: got {field!r}; expected one of {', '.join([*type(m).model_fields, *MODEL_DERIVED_FIELDS])}")
    return getattr(m, field)
