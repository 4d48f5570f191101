"""The one way in: every file a user hands xlplan is opened here.

Each reader (plan files, config.json, workbooks, request logs, Prometheus scrapes,
benchmark results, measurement CSVs) calls these functions instead of opening the
path itself, so every file gets the same checks and every refusal is one line
naming the file and the place in it, raised as :class:`~xlplan.io.errors.InputError`
(the CLI prints it and exits with status 2):

- the path exists, is a regular file (not a folder, a FIFO or a device, which
  would hang a read), and can be read;
- its size is within the limit for its kind, and a ``.gz`` file is decompressed as
  a stream with a cap, so a decompression bomb is refused after reading at most the
  cap, and a truncated ``.gz`` is named as such;
- text is UTF-8 (a byte-order mark is dropped); a byte that is not is named with
  its line and column;
- a zip package (``.xlsx``) is checked member by member, by declared and by actual
  inflated size, before any XML parser sees it.

Parsing structured text (YAML, JSON) is in :mod:`xlplan.io.structured`; CSV tables
in :mod:`xlplan.io.tables`. The API for a new reader::

    from xlplan.io import files, structured
    data = structured.read_json(path, "a benchmark result (JSON)", files.RESULTS_MAX_BYTES)
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from xlplan.io.errors import InputError

MIB = 2**20
"""[bytes/MiB]"""
TEXT_MAX_BYTES = 8 * MIB
"""Largest plan file or config.json read. [bytes]"""
RESULTS_MAX_BYTES = 256 * MIB
"""Largest benchmark result file read. [bytes]"""
SCRAPE_MAX_BYTES = 64 * MIB
"""Largest Prometheus scrape read (a vLLM /metrics page is ~100 KiB). [bytes]"""
TABLE_MAX_BYTES = 256 * MIB
"""Largest CSV table (measurements) read. [bytes]"""
WORKBOOK_MAX_BYTES = 64 * MIB
"""Largest .xlsx file read (the package, compressed). [bytes]"""
GZ_MIN_CAP_BYTES = 256 * MIB
"""A ``.gz`` log may always inflate to this much. [bytes]"""
GZ_MAX_RATIO = 100
"""...and beyond that, to at most this many times its compressed size (request logs compress 3-30x; a bomb ~1000x). [ratio]"""
LINE_MAX_BYTES = 16 * MIB
"""Longest line of a request log; a longer one is left out as a bad row. [bytes]"""


@dataclass(frozen=True)
class ZipLimits:
    """What a zip package (an .xlsx) may hold before an XML parser sees it."""

    max_members: int = 4000  # parts in the package [parts]
    max_member_bytes: int = 16 * MIB  # one part, inflated; the largest sheet we write (traffic data) is < 1 MiB [bytes]
    max_total_bytes: int = 64 * MIB  # all parts, inflated [bytes]


def _size_text(n: float) -> str:
    return f"{n / MIB:,.1f} MiB" if n >= MIB else f"{n:,.0f} bytes"


def check_input(path: str | Path, what: str, max_bytes: int | None = None) -> Path:
    """The path of a file to read, after checking it is one.

    Parameters
    ----------
    path
        The file. [path]
    what
        What the file should be, for messages: ``"a plan file (YAML or JSON)"``. [text]
    max_bytes
        Largest size accepted (on disk); None for no limit. [bytes]

    Returns
    -------
    Path
        The same path. [path]

    Raises
    ------
    InputError
        Not found, a folder, not a regular file, unreadable, or too large.
    """
    path = Path(path)
    src = str(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(src, [f"file not found; expected {what}"]) from None
    except NotADirectoryError:
        raise InputError(src, [f"file not found (a part of the path is a file, not a folder); expected {what}"]) from None
    except PermissionError:
        raise InputError(src, [f"cannot be read (permission denied); expected {what} you may read"]) from None
    except OSError as e:
        raise InputError(src, [f"cannot be read ({e.strerror or type(e).__name__}); expected {what}"]) from None
    except ValueError:  # a NUL in the name
        raise InputError(repr(src), [f"not a valid file name; expected {what}"]) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(src, [f"a folder; expected a file: {what}"])
    if not stat.S_ISREG(st.st_mode):
        raise InputError(src, [f"not a regular file (a pipe, socket or device); expected {what} saved as a file"])
    if not os.access(path, os.R_OK):
        raise InputError(src, [f"cannot be read (permission denied); expected {what} you may read"])
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(src, [f"{_size_text(st.st_size)}; expected {what} of at most {_size_text(max_bytes)}"])
    return path


def is_gzip(path: str | Path) -> bool:
    """Whether a file is read as gzip: its name ends in ``.gz``. [bool]"""
    return str(path).lower().endswith(".gz")


class _Capped(io.RawIOBase):
    """A binary stream that stops with an InputError past ``cap`` bytes, and names a damaged or truncated ``.gz``."""

    def __init__(self, raw: BinaryIO, cap: int | None, src: str, what: str, gz: bool):
        super().__init__()
        self._raw, self._cap, self._src, self._what, self._gz = raw, cap, src, what, gz
        self.count = 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        """Bytes of content read so far. [bytes]"""
        return self.count

    def readinto(self, b) -> int:
        try:
            n = self._raw.readinto(b)
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise InputError(self._src, [(f"a damaged or truncated .gz ({type(e).__name__}: {e}); expected a complete gzip file "
                                         f"of {self._what}: was the copy cut short?")]) from None
        except OSError as e:
            raise InputError(self._src, [f"cannot be read ({e.strerror or e}); expected {self._what}"]) from None
        self.count += n or 0
        if self._cap is not None and self.count > self._cap:
            if self._gz:
                problem = (f"inflates beyond {_size_text(self._cap)}; expected {self._what} of at most that "
                           "(refused as a possible decompression bomb)")
            else:
                problem = f"larger than {_size_text(self._cap)}; expected {self._what} of at most that"
            raise InputError(self._src, [problem])
        return n


@contextmanager
def _open(path: str | Path, what: str, max_bytes: int | None) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """(content stream, the file on disk): see :func:`open_binary`."""
    path = check_input(path, what, None if is_gzip(path) else max_bytes)
    gz = is_gzip(path)
    cap = max_bytes
    if gz and cap is None:
        cap = max(GZ_MIN_CAP_BYTES, GZ_MAX_RATIO * path.stat().st_size)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise InputError(str(path), [f"cannot be read ({e.strerror or e}); expected {what}"]) from None
    inner = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
    stream = io.BufferedReader(_Capped(inner, cap, str(path), what, gz), buffer_size=MIB)
    try:
        yield stream, raw
    finally:
        stream.close()
        inner.close()
        raw.close()


@contextmanager
def open_binary(path: str | Path, what: str, max_bytes: int | None = None) -> Iterator[BinaryIO]:
    """A buffered binary stream of the file's content, ``.gz`` decompressed, capped.

    Parameters
    ----------
    path
        The file. [path]
    what
        What the file should be, for messages. [text]
    max_bytes
        Largest content read (inflated, for ``.gz``); None: for ``.gz``, the larger of
        ``GZ_MIN_CAP_BYTES`` and ``GZ_MAX_RATIO`` times its size, else no limit. [bytes]

    Raises
    ------
    InputError
        As :func:`check_input`; while reading, past the cap or on a damaged ``.gz``.
    """
    with _open(path, what, max_bytes) as (stream, _):
        yield stream


def read_bytes(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The whole content of a file (``.gz`` decompressed), within ``max_bytes``. [bytes]"""
    with open_binary(path, what, max_bytes) as f:
        return f.read()


def _decode_utf8(data: bytes, src: str, what: str) -> str:
    """UTF-8 text from bytes (a byte-order mark dropped); a bad byte is named with its line and column. [text]"""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        before = data[start:e.start]
        line = before.count(b"\n") + 1
        column = len(before) - (before.rfind(b"\n") + 1) + 1
        raise InputError(src, [(f"line {line}, column {column}: byte 0x{data[e.start]:02x} is not UTF-8 text; "
                               f"expected {what} saved as UTF-8")]) from None


def read_text(path: str | Path, what: str, max_bytes: int) -> str:
    """The whole content of a text file (``.gz`` decompressed) as UTF-8, within ``max_bytes``. [text]

    Raises
    ------
    InputError
        As :func:`check_input`; past the size cap; a byte that is not UTF-8, with its line and column;
        a NUL byte (a binary file).
    """
    data = read_bytes(path, what, max_bytes)
    text = _decode_utf8(data, str(path), what)
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError(str(path), [f"line {line}: a NUL byte (a binary file?); expected {what} as text"])
    return text


@dataclass(frozen=True)
class Line:
    """One line of a text file read line by line."""

    number: int  # 1-based line number [line]
    text: str | None  # the decoded line, newline included; None when it could not be decoded or was too long
    problem: str = ""  # why text is None


def iter_lines(path: str | Path, what: str, max_bytes: int | None = None, progress=None) -> Iterator[Line]:
    """The lines of a text file (``.gz`` decompressed, capped), one :class:`Line` per physical line.

    A line that is not UTF-8, or longer than ``LINE_MAX_BYTES``, comes back with
    ``text=None`` and the problem, so a reader can leave it out as one bad row and
    carry on; file-level problems raise :class:`InputError` as :func:`open_binary`.
    ``progress``, if given, is called with the bytes of the file on disk read since its last call. [bytes]
    """
    with _open(path, what, max_bytes) as (f, disk):
        number, reported = 0, 0
        while True:
            raw = f.readline(LINE_MAX_BYTES + 1)
            if progress is not None and number % 4096 == 0:
                position = disk.tell()
                progress(position - reported)
                reported = position
            if not raw:
                return
            number += 1
            if len(raw) > LINE_MAX_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # the rest of the long line
                    raw = f.readline(LINE_MAX_BYTES)
                yield Line(number, None, f"longer than {_size_text(LINE_MAX_BYTES)}")
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield Line(number, raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                yield Line(number, None, f"column {e.start + 1}: byte 0x{raw[e.start]:02x} is not UTF-8 text")


def check_zip_package(path: str | Path, what: str, limits: ZipLimits = ZipLimits()) -> None:
    """Check a zip package (an .xlsx) part by part before any parser reads it.

    Each part's declared inflated size, and then its actual inflated size (read as a
    stream, stopping at the limit), must be within ``limits``; so a part that inflates
    to hundreds of MiB is refused after reading at most the limit.

    Raises
    ------
    InputError
        Not a zip, too many parts, a part or the whole too large inflated, or a damaged part.
    """
    src = str(path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        raise InputError(src, [f"not a valid zip package ({type(e).__name__}: {str(e)[:120]}); expected {what}"]) from None
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise InputError(src, [f"{len(infos):,} parts in the package; expected {what} with at most {limits.max_members:,}"])
        total = 0
        for info in infos:
            if info.file_size > limits.max_member_bytes:
                raise InputError(src, [(f"part {info.filename!r} declares {_size_text(info.file_size)} inflated; expected {what} "
                                       f"whose parts are at most {_size_text(limits.max_member_bytes)} (refused as a possible "
                                       "decompression bomb)")])
            total += info.file_size
        if total > limits.max_total_bytes:
            raise InputError(src, [(f"its parts declare {_size_text(total)} inflated; expected {what} of at most "
                                   f"{_size_text(limits.max_total_bytes)} (refused as a possible decompression bomb)")])
        total = 0
        for info in infos:
            seen = 0
            try:
                with zf.open(info) as part:
                    while chunk := part.read(MIB):
                        seen += len(chunk)
                        total += len(chunk)
                        if seen > limits.max_member_bytes or total > limits.max_total_bytes:
                            raise InputError(src, [(f"part {info.filename!r} inflates beyond its limit; expected {what} (refused as "
                                                   "a possible decompression bomb)")])
            except InputError:
                raise
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError, ValueError) as e:
                raise InputError(src, [(f"part {info.filename!r} is damaged or encrypted ({type(e).__name__}: {str(e)[:120]}); "
                                       f"expected {what}")]) from None


def refuse_other_table_formats(src: str, text: str, columns: int, expected: str) -> None:
    """Refuse an empty file, JSON, or a table split by tabs or semicolons, naming what it is (not 'missing columns').

    Parameters
    ----------
    src : str
        The file's name, for the message. [text]
    text : str
        The file's text. [text]
    columns : int
        How many columns the header should have; a header with half as many tabs (or semicolons) and no comma is
        read as tab- (or semicolon-) separated. [columns]
    expected : str
        What the file should hold, for the message. [text]

    Raises
    ------
    InputError
        Naming the file and what it looks like, and what was expected.
    """
    head = text.lstrip("\ufeff \t\r\n")
    first = head.splitlines()[0] if head else ""
    if not head:
        raise InputError(src, [f"empty; expected a CSV whose header row holds {expected}"])
    if head[0] in "{[":
        raise InputError(src, [f"JSON, not a CSV; expected a comma-separated file of {expected}"])
    for sep, name in (("\t", "tab"), (";", "semicolon")):
        if "," not in first and first.count(sep) >= columns // 2:
            raise InputError(src, [f"{name}-separated; expected commas between {expected} (save it as CSV)"])
