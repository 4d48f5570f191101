"""Reading and writing plan files (YAML or JSON).

Plan files are read through the input layer (:mod:`xlplan.io.files`,
:mod:`xlplan.io.structured`): size and encoding checked, YAML read safely (no
aliases, no repeated keys, no yes/no booleans), and every number checked against
the plan's JSON Schema, so ``peak_rps: true``, ``.inf`` or ``1e300`` are refused
naming ``forecast.peak_rps``. A file's ``schema_version`` is read first (:mod:`xlplan.schema.versions`): a newer one
is refused in one line before anything else in the file is read, and an older one is migrated to today's layout.
Plans are written in the current version, so a file says what it is.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xlplan.io import files, structured
from xlplan.io.errors import InputError, describe_validation_error
from xlplan.io.hf_config import read_hf_config
from xlplan.schema import plausibility, versions
from xlplan.schema.fields import older_plan_notes
from xlplan.schema.plan import Plan

REFERENCE_PLAN = "reference.yaml"
PLAN_FILE = "a plan file (YAML or JSON): try `xlplan example`"


def _parse(text: str, source: str) -> Any:
    return structured.load_yaml(text, source)  # YAML is a superset of JSON


@lru_cache(maxsize=1)
def _schema() -> dict:
    from xlplan.schema.plan import plan_json_schema

    return plan_json_schema()


def _current_layout(data: Any, source: str) -> tuple[Any, int]:
    """The parsed plan in the current layout (:func:`xlplan.schema.versions.upgrade_plan`) and the version it was
    written in; a version this xlplan cannot read is refused in one line."""
    try:
        return versions.upgrade_plan(data), versions.plan_file_version(data)
    except versions.PlanVersionError as e:
        raise InputError(source, [str(e)]) from None


def plan_from_mapping(data: Any, source: str = "plan", base_dir: Path | None = None) -> Plan:
    """Validate a parsed plan; a ``model.config`` path is read relative to ``base_dir``."""
    data, _ = _current_layout(data, source)  # before anything else in it is read: a newer file's fields are not ours
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise InputError(source, [(f"(top level): got {got}; expected a mapping with forecast, promise, model, hardware "
                                  "(`xlplan example` writes one)")])
    model = data.get("model")
    if isinstance(model, dict) and model.get("config") not in (None, ""):
        config = model["config"]
        if not isinstance(config, str):
            raise InputError(source, [f"model.config: got {config!r}; expected the path of a Hugging Face config.json (text)"])
        cfg_path = Path(config)
        if base_dir is not None and not cfg_path.is_absolute():
            cfg_path = base_dir / cfg_path
        try:
            spec = read_hf_config(cfg_path).model_dump()
        except InputError as e:
            raise InputError(source, [f"model.config: {e.source}: {p}" for p in e.problems]) from None
        inline = model.get("spec")
        if inline is not None and not isinstance(inline, dict):
            raise InputError(source, [f"model.spec: got {inline!r}; expected a mapping of model fields"])
        data = {**data, "model": {**model, "spec": {**spec, **(inline or {})}}}
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        raise InputError(source, describe_validation_error(e)) from None
    implausible = plausibility.inputs(plan)
    if implausible:
        raise InputError(source, [b.message for b in implausible])
    return plan


def read_plan(path: str | Path, accept_implausible: tuple[str, ...] = ()) -> Plan:
    """Read and validate a plan file; raises InputError with one line per problem (the file and the field or line).

    ``accept_implausible`` adds fields to the plan's own ``accept_implausible`` (``xlplan --accept-implausible``)."""
    path = Path(path)
    if path.suffix.lower() in (".xlsx", ".xlsm") and path.is_file():
        raise InputError(str(path), [(f"a workbook, not a plan file; expected a plan file (YAML or JSON): read its inputs into "
                                     f"one with `xlplan read {path} -o plan.yaml`")])
    data = _parse(files.read_text(path, PLAN_FILE, files.TEXT_MAX_BYTES), str(path))
    data, written = _current_layout(data, str(path))
    structured.check_numbers(data, str(path), _schema())
    if accept_implausible and isinstance(data, dict):
        mine = data.get("accept_implausible") or []
        mine = list(mine) if isinstance(mine, list) else [mine]
        data = {**data, "accept_implausible": mine + [f for f in accept_implausible if f not in mine]}
    plan = plan_from_mapping(data, str(path), path.parent)
    if written != versions.PLAN_SCHEMA_VERSION:  # the file itself is left as written
        print(f"{path}: written in plan-file version {written}, read as version {versions.PLAN_SCHEMA_VERSION} "
              "(docs/versioning.md); the file is unchanged", file=sys.stderr)
    for line in older_plan_notes(data):  # the file itself is left as written
        print(f"{path}: {line}; the file is unchanged", file=sys.stderr)
    return plan


def reference_plan_text() -> str:
    """The built-in reference plan (the runbook's worked example), as YAML text."""
    return resources.files("xlplan.data").joinpath(REFERENCE_PLAN).read_text(encoding="utf-8")


def reference_plan() -> Plan:
    """The built-in reference plan, validated."""
    return plan_from_mapping(_parse(reference_plan_text(), "reference plan"), "reference plan")


def plan_to_yaml(plan: Plan) -> str:
    """A plan as YAML, leaving out fields at their defaults, headed by the current ``schema_version`` so the file says
    which layout it is written in."""
    import yaml

    fields = plan.model_dump(exclude_defaults=True, mode="json")
    fields.pop(versions.FIELD, None)
    return yaml.safe_dump({versions.FIELD: versions.PLAN_SCHEMA_VERSION, **fields}, sort_keys=False)


def write_text_atomic(path: str | Path, text: str, force: bool = False, suffixes: tuple[str, ...] = ()) -> None:
    """Write ``text`` through the output layer (:func:`xlplan.io.outputs.write_checked`): the folder checked, no overwrite
    without ``force``, a temporary file and a rename, the umask's permissions."""
    from xlplan.io.outputs import write_checked

    write_checked(path, text, force=force, suffixes=suffixes)


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


_WHOLE_FIELDS = {"gpus_per_node", "redundancy", "tp", "schema_version"}
