"""Excel ranges as Python values: a cell or a grid, a key/value table in either orientation, a plan from one.

A range reaches Python as a 2-D list; a 1×1 range is its one value. A table of keys and values may run down two
columns or across two rows, with or without a header; the orientation whose first line holds more real keys wins.
"""

from __future__ import annotations

from udfs.cells import UDFError, bad, blank, excel_error, held_error


def grid(value) -> list[list]:
    """Any argument as a 2-D list: a scalar is 1×1; a flat list (a plain Python caller's column) is n×1."""
    if isinstance(value, list | tuple):
        if value and all(isinstance(r, list | tuple) for r in value):
            return [list(r) for r in value]
        return [[v] for v in value]
    return [[value]]


def scalar_or_grid(value):
    """A 1×1 range is its one value (a blank one is 'not given'); a larger range stays a 2-D list."""
    if isinstance(value, list | tuple):
        g = grid(value)
        if len(g) == 1 and len(g[0]) == 1:
            v = g[0][0]
            return None if blank(v) else v
        return g
    return value


def table_rows(param: str, value, is_key) -> list[list]:
    """A key/value table as (key, value) rows, from a range in either orientation, with or without a header row.

    ``is_key`` tells a real key from a header or a value; the orientation whose first line holds more keys wins.
    """
    g = grid(value)
    for r, row in enumerate(g, start=1):
        for c, cell in enumerate(row, start=1):
            err = excel_error(cell)
            if err is not None:
                raise UDFError(f"{param}: row {r}, column {c} holds {err}; expected a key or a value")
    width = max((len(r) for r in g), default=0)
    if width < 2 and len(g) < 2:
        raise bad(param, value, "a two-column range of keys and values")
    first_col = [r[0] for r in g]
    first_row = g[0]
    by_rows = sum(1 for v in first_col if is_key(v))
    by_cols = sum(1 for v in first_row if is_key(v))
    if width == 2 and by_rows >= by_cols:
        rows = g
    elif len(g) == 2 and by_cols > 0:
        rows = [list(p) for p in zip(*g)]
    elif width >= 2:
        rows = g
    else:
        raise bad(param, value, "a two-column range of keys and values (or two rows: keys above, values below)")
    if rows and not is_key(rows[0][0]) and isinstance(rows[0][0], str) and (len(rows[0]) < 2 or isinstance(rows[0][1], str) or rows[0][1] is None):
        rows = rows[1:]  # a header row such as "Key | Value"
    return [[r[0], r[1] if len(r) > 1 else None] for r in rows if not blank(r[0])]


def plan_from_table(plan_table):
    """The plan a plan-table range gives; blank: the reference plan, as ``xlplan`` without a plan file.

    A table is a plan file in two columns: a policy key it leaves out takes the engine's default, as ``xlplan plan``
    gives a plan file that leaves it out (the reference plan's pinned conventions — the runbook's memory rule, full
    attention FLOPs, the decode-only latency step — are that plan's own choices, not defaults); any other key left
    out takes the reference plan's value (the forecast, promise, model and hardware a plan file must state).
    """
    from xlplan.io.planfile import plan_from_pairs, reference_plan
    from xlplan.schema.policy import Policy

    one = scalar_or_grid(plan_table)
    if blank(one):
        return reference_plan()
    if not isinstance(one, list):
        held_error("plan_table", one)
        raise bad("plan_table", one, "a two-column range of plan keys and values, e.g. forecast.peak_rps | 40")
    base = reference_plan().model_copy(update={"policy": Policy()})
    return plan_from_pairs(table_rows("plan_table", plan_table, is_plan_key), base=base, source="plan_table")


def is_plan_key(v) -> bool:
    """A dotted plan key such as forecast.peak_rps (not a header such as 'Key')."""
    from xlplan.schema.plan import Plan

    if not isinstance(v, str) or "." not in v:
        return False
    return v.strip().split(".", 1)[0] in Plan.model_fields


def is_config_key(v) -> bool:
    """A config.json field name (hidden_size, num_hidden_layers...), not a header or a value."""
    from xlplan.io.hf_config import KNOWN_FIELDS

    return isinstance(v, str) and v.strip() in KNOWN_FIELDS


def spec_from_config_table(config):
    """A model spec from a two-column range of config.json fields and values; 4096.0 from Excel is 4096."""
    from xlplan.io.hf_config import spec_from_hf_config

    rows = table_rows("config", config, is_config_key)
    fields = {str(r[0]).strip(): r[1] for r in rows}
    for k, v in fields.items():
        if isinstance(v, float) and v.is_integer():
            fields[k] = int(v)
    return spec_from_hf_config(fields, "config range")
