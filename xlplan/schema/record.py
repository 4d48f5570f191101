"""The base of every result model: frozen and typed, and knowing nothing of how it is shown.

The result models themselves, and their public names, are :mod:`xlplan.schema.result`'s.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Out(BaseModel):
    """A result: frozen once built, every field typed and described with its unit."""

    model_config = ConfigDict(frozen=True)
