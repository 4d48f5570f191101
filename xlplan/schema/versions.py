"""The plan file's version: which layout a file is written in, and the migrations that read an older one in today's.

A plan file may say which layout it follows with a top-level ``schema_version`` (an integer); a file without one is
version 1, the layout of every file written before versions existed. A file of an older version is migrated, one
version at a time, by the functions :data:`PLAN_MIGRATIONS` holds, before the plan is validated; a file of a newer
version than :data:`PLAN_SCHEMA_VERSION` was written by a newer xlplan and is refused in one line that says so. The
rule for when a version is raised, for the plan file and for each ``--json`` output, is docs/versioning.md.

Older spellings inside version 1 (``costs.mode: rent``, ``hardware.billing``) are not versions: they are read by
:func:`xlplan.schema.fields.migrate_older_plan`, with a note, as they were before versions existed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

PLAN_SCHEMA_VERSION = 1
"""The plan-file layout this xlplan writes and the newest it reads; a file without ``schema_version`` is 1. [—]"""

PLAN_MIGRATIONS: Mapping[int, Callable[[dict], dict]] = MappingProxyType({})
"""The migration from each older plan-file version N to N + 1, keyed by N: a function from the file's mapping as parsed
(version N) to the same plan's mapping in version N + 1, returning a new mapping and changing nothing it is given.
Version 1 is the first, so there are none yet; raising :data:`PLAN_SCHEMA_VERSION` adds the one from the version
before it (docs/versioning.md). [—]"""

FIELD = "schema_version"
"""The plan file's top-level key naming its layout, as ``plan --json`` names its own. [text]"""

UPGRADE = "upgrade xlplan: pip install -U xlplan"
"""What to do with a file written by a newer xlplan. [text]"""


class PlanVersionError(ValueError):
    """A plan file's ``schema_version`` this xlplan cannot read: not a whole number from 1, or newer than it knows."""


def plan_file_version(data: Any) -> int:
    """The layout version a parsed plan file says it follows. [—]

    Parameters
    ----------
    data : Any
        The plan file as parsed (a mapping; anything else has no version and is version 1, for the schema to refuse).

    Returns
    -------
    int
        ``schema_version`` where given, else 1. [—]

    Raises
    ------
    PlanVersionError
        One line naming the field and the value: a value that is not a whole number from 1 (text, a fraction, a
        yes/no, blank), or a version newer than :data:`PLAN_SCHEMA_VERSION` (written by a newer xlplan; upgrade it).

    Examples
    --------
    >>> plan_file_version({"forecast": {}})
    1
    >>> plan_file_version({"schema_version": 1})
    1
    """
    if not isinstance(data, dict) or FIELD not in data:
        return 1
    v = data[FIELD]
    reads = "this xlplan reads plan-file version 1" if PLAN_SCHEMA_VERSION == 1 else \
        f"this xlplan reads plan-file versions 1 to {PLAN_SCHEMA_VERSION}"
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise PlanVersionError(f"{FIELD}: got {v!r}; expected a whole number from 1, the plan file's layout version "
                               f"({reads}; leave it out for 1)")
    if v > PLAN_SCHEMA_VERSION:
        raise PlanVersionError(f"{FIELD}: got {v}; {reads}: written by a newer xlplan; {UPGRADE}")
    return v


def upgrade_plan(data: Any) -> Any:
    """A parsed plan file in the current layout: each migration from its version to :data:`PLAN_SCHEMA_VERSION` applied.

    Parameters
    ----------
    data : Any
        The plan file as parsed.

    Returns
    -------
    Any
        ``data`` itself where it is already the current version (or not a mapping, for the schema to refuse); else a new
        mapping, migrated through :data:`PLAN_MIGRATIONS` one version at a time, whose ``schema_version`` is the
        current one. The mapping given is never changed.

    Raises
    ------
    PlanVersionError
        As :func:`plan_file_version`: a version that is not a whole number from 1, or a newer one.
    """
    version = plan_file_version(data)
    if version == PLAN_SCHEMA_VERSION:
        return data
    for n in range(version, PLAN_SCHEMA_VERSION):
        data = PLAN_MIGRATIONS[n](data)
    return {**data, FIELD: PLAN_SCHEMA_VERSION}
