"""The review history: a JSON Lines file, one line per review, the one output ``xlplan review`` lets grow.

Read whole and checked before anything is appended; the new line is written by replacing the file with its old
lines and the new one (:func:`xlplan.io.outputs.write_outputs`), so a failed write leaves the file as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from xlplan.io.errors import InputError
from xlplan.io.outputs import Output, check_outputs, write_outputs
from xlplan.schema.review import HistoryLine

HISTORY = (".jsonl",)
"""The history's name ends in .jsonl. [text]"""


def read_history(path: Path) -> tuple[list[HistoryLine], str]:
    """The reviews a history file holds, oldest first, and its text; a file not there yet holds none.

    Raises
    ------
    InputError
        The path cannot be the history (a folder, a wrong suffix) or a line is not a review's: one line, the line's
        number.
    """
    check_outputs([Output(path, "--history", HISTORY)], force=True)
    if not path.exists():
        return [], ""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(path), [f"cannot be read ({e}); expected the review history, UTF-8 JSON Lines"]) from None
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            lines.append(HistoryLine.model_validate(json.loads(raw)))
        except (json.JSONDecodeError, ValidationError):
            raise InputError(str(path), [(f"line {number} is not a review's line (one JSON object with date, plan, planned, "
                                         "measured, fleet_planned and fleet_replanned); fix or remove it, nothing was "
                                         "appended")]) from None
    return lines, text


def append_history(path: Path, old_text: str, line: HistoryLine) -> None:
    """Write the history with one more line, replacing the file whole (never a partial line)."""
    if old_text and not old_text.endswith("\n"):
        old_text += "\n"
    write_outputs([(path, old_text + json.dumps(line.model_dump(mode="json"), separators=(", ", ": ")) + "\n")])
