"""The one way out: every file a command writes is checked first and written whole.

A command lists all the files it will write, companions included (the PDF beside a
workbook, the PNGs beside a forecast), and calls :func:`check_outputs` before it
writes any of them, so a command that cannot write one of its outputs writes none:

- each folder exists, is a folder, and may be written to;
- no file is overwritten without ``force``, a folder or a device is never a target,
  and no output is one of the command's own inputs (not even with ``force``);
- each name ends in a suffix its content can have (``.xlsx`` for a workbook);
- no two outputs are the same file.

:func:`write_outputs` then writes each to a temporary file in its own folder and
renames them into place only once all are written, with the permissions the umask
gives a new file (an overwritten file keeps its own). Usage::

    outs = [Output(md, "--markdown", MARKDOWN), Output(xlsx, "--workbook", WORKBOOK)]
    check_outputs(outs, force)
    ...compute...
    write_outputs([(md, text), (xlsx, data)])
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xlplan.io.errors import InputError


def json_text(data) -> str:
    """``data`` as strict JSON, indented: a figure that is not a finite number (an inter-token gap a one-token output
    never has, an infinite path) is written ``null``, never the ``NaN`` or ``Infinity`` a strict parser refuses. [text]

    Parameters
    ----------
    data : object
        Plain data: dicts, lists, strings, numbers, booleans and None (a model's ``model_dump(mode="json")``).

    Returns
    -------
    str
        The JSON text. [text]
    """
    import json
    import math

    def strict(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: strict(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [strict(v) for v in x]
        return x

    return json.dumps(strict(data), indent=2, allow_nan=False)


YAML = (".yaml", ".yml")
JSON = (".json",)
MARKDOWN = (".md", ".markdown", ".txt")
WORKBOOK = (".xlsx",)
PDF = (".pdf",)
PNG = (".png",)


@dataclass(frozen=True)
class Output:
    """A file a command will write."""

    path: Path  # where [path]
    option: str = "output"  # the option that names it, for messages: '--workbook', '-o' [text]
    suffixes: tuple[str, ...] = ()  # the name's allowed endings, lower case; empty: any [text]


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no portable way to read it without setting it
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """Permission bits a new file gets under the current umask (0o644 under umask 022). [mode bits]"""
    return 0o666 & ~_umask()


def _problems(out: Output, force: bool) -> list[str]:
    path = out.path
    if path.is_dir() and not path.is_symlink():
        example = f"{path.name or 'out'}{out.suffixes[0]}" if out.suffixes else "a name"
        return [f"a folder; expected a file name, e.g. {str(path / example)!r}"]
    if out.suffixes and path.suffix.lower() not in out.suffixes:
        return [f"got a name ending in {path.suffix or 'no suffix'!r}; the name must end in {' or '.join(out.suffixes)}"]
    folder = path.parent
    if not folder.exists():
        return [f"folder {str(folder)!r} does not exist; expected an existing folder (create it first)"]
    if not folder.is_dir():
        return [f"{str(folder)!r} is a file, not a folder; expected an existing folder"]
    if not os.access(folder, os.W_OK | os.X_OK):
        return [f"folder {str(folder)!r} cannot be written to (permission denied); expected a folder you may write to"]
    if path.is_symlink() or path.exists():
        if path.is_dir():
            return ["a folder; expected a file name"]
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            return ["not a regular file (a device, pipe or socket); expected a file name"]
        if not force:
            return ["already exists; expected a new file name, or --force to overwrite it"]
    return []


def check_outputs(outputs: Sequence[Output], force: bool = False, inputs: Sequence[str | Path] = ()) -> None:
    """Check every output of a command before any is written.

    Parameters
    ----------
    outputs
        Every file the command will write, companions included. [—]
    force
        Whether existing files may be overwritten. [bool]
    inputs
        The files the command reads; none may be an output. [path]

    Raises
    ------
    InputError
        One line per problem; nothing has been written.
    """
    real_inputs = {os.path.realpath(p) for p in inputs}
    seen: dict[str, Output] = {}
    found: list[tuple[Output, str]] = []
    for out in outputs:
        real = os.path.realpath(out.path)
        if real in seen:
            found.append((out, f"the same file as {seen[real].option} ({seen[real].path}); expected a different file for each output"))
            continue
        seen[real] = out
        if real in real_inputs:
            found.append((out, "is also an input of this command; expected a different file name (the input is never overwritten)"))
            continue
        try:
            found += [(out, p) for p in _problems(out, force)]
        except OSError as e:  # a folder on the way that may not be looked into
            found.append((out, f"cannot be checked ({e.strerror or e}); expected a place you may write to"))
    if len(found) == 1:
        out, problem = found[0]
        raise InputError(str(out.path), [f"{out.option}: {problem}"])
    if found:
        raise InputError("outputs", [f"{out.path} ({out.option}): {problem}" for out, problem in found]
                         + ["nothing was written"])


def write_outputs(contents: Sequence[tuple[str | Path, bytes | str]]) -> None:
    """Write files whole: each to a temporary file in its folder, then all renamed into place.

    Text is written as UTF-8. A new file gets the umask's permissions; an
    overwritten one keeps its own. Call :func:`check_outputs` first.

    Raises
    ------
    InputError
        A write failed (disk full, permissions changed); no temporary file is left behind, and when it failed
        before the renames (where a full disk fails), no output was changed.
    """
    mode = new_file_mode()
    temps: list[tuple[str, Path]] = []
    current = Path(".")
    try:
        for path, data in contents:
            current = Path(path)
            fd, tmp = tempfile.mkstemp(dir=current.parent, prefix=f".{current.name[:80]}.", suffix=".tmp")
            temps.append((tmp, current))
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
                f.flush()
                os.fsync(f.fileno())
            try:
                keep = stat.S_IMODE(current.stat().st_mode) if current.is_file() else mode
            except OSError:
                keep = mode
            os.chmod(tmp, keep)
        for tmp, path in temps:
            current = path
            os.replace(tmp, path)
    except OSError as e:
        raise InputError(str(current), [f"cannot be written ({e.strerror or e}); expected a place with room and permission to write"]) from None
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def write_checked(path: str | Path, data: bytes | str, force: bool = False, option: str = "output",
                  suffixes: tuple[str, ...] = (), inputs: Sequence[str | Path] = ()) -> None:
    """Check one output and write it (:func:`check_outputs`, then :func:`write_outputs`)."""
    check_outputs([Output(Path(path), option, suffixes)], force, inputs)
    write_outputs([(path, data)])
