"""Helpers shared by tests."""

from xlplan.plan import Plan


def replan(base: Plan, **sections) -> Plan:
    """A copy of ``base`` with sections updated field by field, re-validated."""
    data = base.model_dump(exclude_none=True)
    for section, fields in sections.items():
        if isinstance(fields, dict) and isinstance(data.get(section), dict):
            data[section] = {k: v for k, v in {**data[section], **fields}.items() if v is not None}
        else:
            data[section] = fields
    return Plan.model_validate(data)
