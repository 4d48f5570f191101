"""Optional parts: which extra installs which package, and a clear line when one is missing.

``pip install xlplan`` gives ``plan``, ``capacity``, ``workbook``, ``template``, ``read``,
``check``, ``example``, ``catalog``, ``schema`` and ``calibrate``. The heavier parts are
extras: a command that needs one and finds it missing exits with status 2 and one
line saying what to install, never a traceback.
"""

from __future__ import annotations

import importlib.util

from xlplan.io.errors import InputError

EXTRA_OF_MODULE = {
    "pandas": "logs",
    "pyarrow": "logs",
    "matplotlib": "logs",
    "prometheus_client": "metrics",
    "xlwings": "excel",
    "scipy": "fit",
}
"""The extra that installs each optional top-level package."""


class MissingExtra(InputError):
    """A command needs a package that an extra installs, and it is not installed."""

    def __init__(self, module: str, extra: str, command: str | None = None):
        self.module, self.extra = module, extra
        super().__init__(f"xlplan {command}" if command else "xlplan",
                         [f"needs {module}, which is not installed; expected the '{extra}' extra: pip install 'xlplan[{extra}]'"])


def _installed(module: str) -> bool:
    """Whether a top-level package can be imported (without importing it). [bool]"""
    try:
        return importlib.util.find_spec(module) is not None
    except (ValueError, ImportError):  # a module left half-imported, or blocked
        return False


def require(*modules: str, command: str | None = None) -> None:
    """Raise :class:`MissingExtra` for the first of ``modules`` that is not installed.

    Parameters
    ----------
    modules
        Top-level package names, each a key of ``EXTRA_OF_MODULE``. [text]
    command
        The command that needs them, for the message. [text]
    """
    for module in modules:
        if not _installed(module):
            raise MissingExtra(module, EXTRA_OF_MODULE.get(module, "all"), command)


def missing_extra(error: ModuleNotFoundError, command: str | None = None) -> MissingExtra | None:
    """The :class:`MissingExtra` behind an import error of an optional package; None for any other module (a bug)."""
    root = (error.name or "").split(".")[0]
    if root in EXTRA_OF_MODULE:
        return MissingExtra(root, EXTRA_OF_MODULE[root], command)
    return None
