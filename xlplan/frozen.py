"""A frozen dataclass with some fields changed, for the hot loops that change a few of many fields.

:func:`dataclasses.replace` builds the copy through ``__init__`` (every field passed by keyword, defaults and
``__post_init__`` honoured): about 25 µs for a 74-field :class:`~xlplan.plan.scenario.Scenario`, and a calibration asks
for some 600,000 copies. For a slotted frozen dataclass with no ``__post_init__``, copying the slots is the same
object and half the time. Any other class goes through :func:`dataclasses.replace`.
"""

from __future__ import annotations

import dataclasses
import functools


@functools.cache
def _slots(cls: type) -> tuple[str, ...] | None:
    """The field names to copy slot by slot, or None where ``replace`` must build the copy. [—]"""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__") or "__slots__" not in cls.__dict__:
        return None
    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields):
        return None
    return tuple(f.name for f in fields)


def replaced(obj, **changes):
    """``dataclasses.replace(obj, **changes)``, by copying slots where that is the same object.

    Parameters
    ----------
    obj : dataclass instance
        The frozen dataclass to copy. [—]
    **changes
        Fields to change, by name, each as ``replace`` takes it. [field's unit]

    Returns
    -------
    object
        A new instance of ``type(obj)``: ``changes`` set, every other field as in ``obj``. [—]
    """
    names = _slots(type(obj))
    if names is None:
        return dataclasses.replace(obj, **changes)
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {', '.join(sorted(unknown))}")
    new = object.__new__(type(obj))
    set_ = object.__setattr__
    for name in names:
        set_(new, name, changes[name] if name in changes else getattr(obj, name))
    return new
