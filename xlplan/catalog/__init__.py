"""The catalog of GPUs and models, read lazily from the YAML files beside this module.

Every entry carries its sources. Look-ups accept the key, the display name, the
Hugging Face id or an alias, case-insensitively; an unknown name raises
:class:`UnknownNameError` with the closest matches.
"""

from __future__ import annotations

import difflib
import re
from functools import cache
from importlib import resources

from xlplan.catalog.specs import GPUSpec, ModelSpec
from xlplan.units import GIB, MIB


class UnknownNameError(LookupError):
    """A GPU or model name the catalog does not have."""

    def __init__(self, kind: str, name: str, suggestions: list[str], known: list[str]):
        self.kind, self.name, self.suggestions, self.known = kind, name, suggestions, known
        hint = f"did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else f"known: {', '.join(known)}"
        super().__init__(f"unknown {kind} {name!r}; {hint}")


@cache
def _load(filename: str) -> dict:
    import yaml

    text = resources.files(__package__).joinpath(filename).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def _normalise(name: str) -> str:
    return " ".join(name.strip().lower().replace("_", "-").split())


@cache
def _gpus() -> dict[str, GPUSpec]:
    out = {}
    for key, row in _load("gpus.yaml").items():
        row = dict(row)
        row.pop("aliases", None)
        row["memory_gib"] = row.pop("memory_mib_reported") * MIB / GIB
        out[key] = GPUSpec(**row)
    return out


@cache
def _models() -> dict[str, ModelSpec]:
    out = {}
    for key, row in _load("models.yaml").items():
        row = dict(row)
        row.pop("aliases", None)
        out[key] = ModelSpec(**row)
    return out


@cache
def _index(filename: str) -> dict[str, str]:
    index = {}
    for key, row in _load(filename).items():
        for name in [key, row.get("name", ""), row.get("hf_id", ""), *row.get("aliases", [])]:
            if name:
                index[_normalise(name)] = key
    return index


def find_key(kind: str, name: str) -> str | None:
    """The catalog key of a GPU or model name, id or alias, or None (no suggestions computed: a fast probe). [text]

    Parameters
    ----------
    kind : {'GPU', 'model'}
        Which catalog to look in.
    name : str
        Key, display name, Hugging Face id or alias, in any case; underscores read as hyphens.

    Returns
    -------
    str or None
        The key in ``gpus.yaml`` or ``models.yaml``; None where the name is not there.
    """
    return _index("gpus.yaml" if kind == "GPU" else "models.yaml").get(_normalise(name))


def _resolve(kind: str, filename: str, name: str) -> str:
    index = _index(filename)
    key = index.get(_normalise(name))
    if key is None:
        keys = list(_load(filename))
        close = difflib.get_close_matches(_normalise(name), list(index), n=3, cutoff=0.6)
        suggestions = list(dict.fromkeys(index[c] for c in close))
        raise UnknownNameError(kind, name, suggestions, keys)
    return key


def gpu_names() -> list[str]:
    """Catalog keys of every GPU.

    Returns
    -------
    list of str
        The keys of ``gpus.yaml``, in file order.
    """
    return list(_gpus())


def datacenter_gpu_names() -> list[str]:
    """Catalog keys of the GPUs that may be deployed in a datacenter (``datacenter: true`` in ``gpus.yaml``).

    Returns
    -------
    list of str
        The keys, in file order; GeForce cards are left out (their driver licence forbids datacenter deployment).
    """
    return [k for k, g in _gpus().items() if g.datacenter]


def price_date(note: str) -> str:
    """The date a catalog price note gives (2026-07-23, June 2026), or '' where it names none. [text]

    Parameters
    ----------
    note : str
        A ``price_note`` of ``gpus.yaml``: provider, offer and date, e.g. "Lambda on-demand, 2026-05-18 (...)".

    Returns
    -------
    str
        The first ISO date (YYYY-MM-DD) it names, else the first 'Month YYYY', else ''. [text]
    """
    m = re.search(r"\b\d{4}-\d{2}-\d{2}\b", note) or re.search(
        r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b", note)
    return m.group(0) if m else ""


def model_names() -> list[str]:
    """Catalog keys of every model.

    Returns
    -------
    list of str
        The keys of ``models.yaml``, in file order.
    """
    return list(_models())


def gpu_key(name: str) -> str:
    """Catalog key for a GPU name, id or alias; raises UnknownNameError.

    Parameters
    ----------
    name : str
        Key, display name or alias, in any case; underscores read as hyphens.

    Returns
    -------
    str
        The GPU's key in ``gpus.yaml``.
    """
    return _resolve("GPU", "gpus.yaml", name)


def model_key(name: str) -> str:
    """Catalog key for a model name, id or alias; raises UnknownNameError.

    Parameters
    ----------
    name : str
        Key, display name, Hugging Face id or alias, in any case; underscores read as hyphens.

    Returns
    -------
    str
        The model's key in ``models.yaml``.
    """
    return _resolve("model", "models.yaml", name)


def get_gpu(name: str) -> GPUSpec:
    """The GPU called ``name`` (key, display name or alias).

    Parameters
    ----------
    name : str
        Key, display name or alias, in any case.

    Returns
    -------
    GPUSpec
        Its catalog entry, memory as the driver reports it (MiB converted to GiB).
    """
    return _gpus()[gpu_key(name)]


def get_model(name: str) -> ModelSpec:
    """The model called ``name`` (key, display name, Hugging Face id or alias).

    Parameters
    ----------
    name : str
        Key, display name, Hugging Face id or alias, in any case.

    Returns
    -------
    ModelSpec
        Its catalog entry.
    """
    return _models()[model_key(name)]


def ownership_defaults() -> dict:
    """Default figures for owning GPUs (depreciation, PUE, hosting), each ``{value, date, source, reliability}``.

    Returns
    -------
    dict
        A copy of the ``defaults`` of ``ownership.yaml``, figure name to ``{value, date, source, reliability}``.
    """
    return dict(_load("ownership.yaml")["defaults"])


def ownership_for(name: str) -> dict:
    """A GPU's ownership figures where a credible one exists: ``capex_usd_per_node`` (with ``gpus``), ``kw_per_gpu``,
    ``lead_time`` (text); ``{}`` when none. Each figure ``{value, date, source, reliability}``.

    Parameters
    ----------
    name : str
        The GPU's key, display name or alias.

    Returns
    -------
    dict
        A copy of the GPU's entry in ``ownership.yaml``, figure name to ``{value, date, source, reliability}``;
        empty when the catalog has none.
    """
    return dict(_load("ownership.yaml")["gpus"].get(gpu_key(name), {}))


def contract_offers(name: str) -> dict:
    """A GPU's published reserved, committed and interruptible prices (``contracts.yaml``); ``{}`` when none.

    Parameters
    ----------
    name : str
        The GPU's key, display name or alias.

    Returns
    -------
    dict
        Offer kind ('reserved_1y', 'reserved_3y', 'reserved', 'capacity_block', 'spot') to ``{usd_per_gpu_hour,
        provider, date, url, reliability, note}`` (and the provider's ``on_demand_usd_per_gpu_hour`` where published);
        a kind with no published figure is absent.
    """
    return {k: dict(v) for k, v in (_load("contracts.yaml").get(gpu_key(name)) or {}).items()}


@cache
def api_price_rows() -> tuple[dict, ...]:
    """The managed-API price list (``api_prices.csv`` beside the planner's data), one dict per offer, with its
    ``size_class``, prices in USD per million tokens, date and source.

    Returns
    -------
    tuple of dict
        One row per offer, the CSV's columns as text except ``usd_per_1M_input`` and ``usd_per_1M_output`` (floats,
        USD per million tokens).
    """
    import csv

    text = resources.files("xlplan.data").joinpath("api_prices.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(text.splitlines()):
        row["usd_per_1M_input"] = float(row["usd_per_1M_input"])
        row["usd_per_1M_output"] = float(row["usd_per_1M_output"])
        rows.append(row)
    return tuple(rows)
