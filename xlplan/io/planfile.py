"""Reading and writing plan files (YAML or JSON)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xlplan.io.errors import InputError, describe_validation_error
from xlplan.io.hf_config import read_hf_config
from xlplan.plan import Plan

REFERENCE_PLAN = "reference.yaml"


def _parse(text: str, source: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise InputError(source, [f"{where}not valid YAML/JSON ({getattr(e, 'problem', e)})"]) from None


def plan_from_mapping(data: Any, source: str = "plan", base_dir: Path | None = None) -> Plan:
    """Validate a parsed plan; a ``model.config`` path is read relative to ``base_dir``."""
    if not isinstance(data, dict):
        raise InputError(source, [f"(top level): got {type(data).__name__}; expected a mapping with forecast, promise, model, hardware"])
    model = data.get("model")
    if isinstance(model, dict) and model.get("config"):
        cfg_path = Path(model["config"])
        if base_dir is not None and not cfg_path.is_absolute():
            cfg_path = base_dir / cfg_path
        spec = read_hf_config(cfg_path).model_dump()
        data = {**data, "model": {**model, "spec": {**spec, **(model.get("spec") or {})}}}
    try:
        return Plan.model_validate(data)
    except ValidationError as e:
        raise InputError(source, describe_validation_error(e)) from None


def read_plan(path: str | Path) -> Plan:
    """Read and validate a plan file; raises InputError with one line per problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), ["file not found; expected a plan file (YAML or JSON): try `xlplan example`"]) from None
    except UnicodeDecodeError:
        raise InputError(str(path), ["not a text file; expected a plan file (YAML or JSON)"]) from None
    return plan_from_mapping(_parse(text, str(path)), str(path), path.parent)


def reference_plan_text() -> str:
    """The built-in reference plan (the runbook's worked example), as YAML text."""
    return resources.files("xlplan.data").joinpath(REFERENCE_PLAN).read_text(encoding="utf-8")


def reference_plan() -> Plan:
    """The built-in reference plan, validated."""
    return plan_from_mapping(_parse(reference_plan_text(), "reference plan"), "reference plan")


def plan_to_yaml(plan: Plan) -> str:
    """A plan as YAML, leaving out fields at their defaults."""
    import yaml

    return yaml.safe_dump(plan.model_dump(exclude_defaults=True, mode="json"), sort_keys=False)


def write_text_atomic(path: str | Path, text: str, force: bool = False) -> None:
    """Write ``text`` via a temporary file and a rename; refuse to overwrite without ``force``."""
    import os
    import tempfile

    path = Path(path)
    if path.exists() and not force:
        raise InputError(str(path), ["already exists; expected a new file name, or --force to overwrite"])
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_dumps(obj: Any) -> str:
    """JSON with a stable layout."""
    return json.dumps(obj, indent=2, sort_keys=False)


def plan_from_pairs(pairs: list, base: Plan | None = None, source: str = "plan table") -> Plan:
    """A plan from (dotted key, value) pairs, e.g. ``[["forecast.peak_rps", 60], ["model.name", "llama-3.1-70b"]]``.

    Keys left out keep the base plan's value (the reference plan by default); an
    empty value clears an optional field. This is how a spreadsheet range of two
    columns describes a plan.
    """
    data = (base or reference_plan()).model_dump(exclude_none=True)
    problems = []
    for i, row in enumerate(pairs, start=1):
        if not isinstance(row, (list, tuple)) or len(row) < 2:
            problems.append(f"row {i}: got {row!r}; expected two cells, a key such as forecast.peak_rps and its value")
            continue
        key, value = row[0], row[1]
        if key in (None, ""):
            continue
        parts = str(key).strip().split(".")
        node = data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        if value in (None, ""):
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = int(value) if isinstance(value, float) and value.is_integer() and parts[-1] in _WHOLE_FIELDS else value
    if problems:
        raise InputError(source, problems)
    if "itl_s" in data.get("promise", {}) and "tokens_per_s" in data.get("promise", {}):
        # a table that gives the streaming speed replaces the base plan's inter-token target
        if any(str(r[0]).strip() == "promise.tokens_per_s" for r in pairs if isinstance(r, (list, tuple)) and r):
            data["promise"].pop("itl_s")
        else:
            data["promise"].pop("tokens_per_s")
    return plan_from_mapping(data, source)


_WHOLE_FIELDS = {"gpus_per_node", "redundancy", "tp"}
