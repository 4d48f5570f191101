"""Safe YAML and strict JSON: text that parses only to what it plainly says.

YAML (plan files) is read with a loader that:

- refuses aliases (``*name``), so an alias bomb ("billion laughs") is refused at the
  first alias, in microseconds, and merge keys (``<<: *base``) with it;
- refuses a key given twice in one mapping (YAML lets the last silently win), and
  keys that are not text;
- reads scalars as YAML 1.2 does: ``true``/``false`` are booleans but ``yes``, ``no``,
  ``on``, ``off`` are text; ``1:30`` is text, not 90; ``012`` is 12, not octal; a date is
  text; ``1e3`` is a number;
- refuses tags other than the plain ones (``!!set``, ``!!binary``, ``!!python/…``).

JSON (config.json, benchmark results) is read with ``json`` plus a refusal of
repeated keys and of ``NaN``/``Infinity``, which are not JSON.

:func:`check_numbers` then walks the parsed data and refuses, naming the field by
its dotted path, any number that is not finite or is beyond ``MAX_ABS_NUMBER``;
given a JSON Schema (a plan's) it also refuses a boolean or a numeric text where
only a number is expected (``peak_rps: true`` is not 1 req/s).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from xlplan.io import files
from xlplan.io.errors import InputError

MAX_ABS_NUMBER = 1e15
"""Largest magnitude of any number in a plan or result file: no input of a capacity plan is near it (tokens per
request < 1e8, requests/s < 1e7, prices < 1e7), and beyond it a product of two inputs can overflow a float. [—]"""

_YAML_INT = re.compile(r"^[-+]?(?:0|[0-9][0-9_]*)$")
_YAML_FLOAT = re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
                         r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_YAML_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_YAML_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")


def _loader(source: str):
    """A PyYAML SafeLoader subclass for one file (the source names the file in errors)."""
    loader = _refusing_loader(source)
    _read_yaml_12_core(loader)
    return loader


def _refusing_loader(source: str):
    """A SafeLoader subclass that refuses aliases, merge keys, repeated or non-text keys, tags and huge integers."""
    import yaml

    def refuse(node, problem: str):
        mark = node.start_mark
        raise InputError(source, [f"line {mark.line + 1}, column {mark.column + 1}: {problem}"])

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                mark = event.start_mark
                raise InputError(source, [(f"line {mark.line + 1}, column {mark.column + 1}: alias *{event.anchor}; expected each "
                                          "value written out (aliases and merge keys are refused: they can expand without bound)")])
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            if not isinstance(node, yaml.MappingNode):
                refuse(node, f"expected a mapping, found {node.id}")
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    refuse(key_node, "merge key <<; expected each field written out")
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    refuse(key_node, f"key {key!r} is not text; expected field names")
                if key in seen:
                    refuse(key_node, f"key {key!r} appears twice in one mapping (first on line {seen[key]}); expected each key "
                                     "once (YAML would silently keep the last)")
                seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

        def construct_undefined(self, node):
            refuse(node, f"YAML tag {node.tag!r} is not allowed; expected plain mappings, lists, text and numbers")

        def construct_yaml_int(self, node):
            try:
                return int(self.construct_scalar(node).replace("_", ""))
            except ValueError:  # more digits than Python converts
                refuse(node, "a number with thousands of digits; expected a figure")

        def construct_yaml_float(self, node):
            text = self.construct_scalar(node).replace("_", "").lower()
            if text in (".inf", "+.inf", "-.inf"):
                return -math.inf if text.startswith("-") else math.inf
            if text == ".nan":
                return math.nan
            return float(text)

    return Loader


def _read_yaml_12_core(loader) -> None:
    """Give ``loader`` the plain tags' constructors only, and YAML 1.2's core scalars as its implicit types."""
    from yaml.constructor import SafeConstructor

    loader.yaml_constructors = {}
    for tag, fn in (("null", SafeConstructor.construct_yaml_null), ("bool", SafeConstructor.construct_yaml_bool),
                    ("int", loader.construct_yaml_int), ("float", loader.construct_yaml_float),
                    ("str", SafeConstructor.construct_yaml_str), ("seq", SafeConstructor.construct_yaml_seq),
                    ("map", SafeConstructor.construct_yaml_map)):
        loader.add_constructor(f"tag:yaml.org,2002:{tag}", fn)
    loader.add_constructor(None, loader.construct_undefined)
    loader.yaml_implicit_resolvers = {}  # YAML 1.2 core scalars only
    for tag, pattern, first in (("bool", _YAML_BOOL, "tTfF"), ("int", _YAML_INT, "-+0123456789"),
                                ("float", _YAML_FLOAT, "-+0123456789."), ("null", _YAML_NULL, ["~", "n", "N", ""])):
        loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", pattern, list(first))


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML (or JSON, which YAML reads too) safely; see the module notes for what is refused.

    Parameters
    ----------
    text
        The document. [text]
    source
        The file, for messages. [text]

    Raises
    ------
    InputError
        Not valid YAML (with line and column), an alias, a repeated or non-text key, a tag, or nesting too deep.
    """
    import yaml

    try:
        return yaml.load(text, Loader=_loader(source))  # a SafeLoader subclass, narrower still
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise InputError(source, [f"{where}not valid YAML/JSON ({getattr(e, 'problem', None) or e})"]) from None
    except RecursionError:
        raise InputError(source, ["nested too deeply; expected a plan's few levels of mappings"]) from None


class _Object(dict):
    """A JSON object that remembers keys it saw twice."""

    repeated: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    out = _Object()
    repeated = []
    for k, v in pairs:
        if k in out:
            repeated.append(k)
        out[k] = v
    if repeated:
        out.repeated = tuple(repeated)
    return out


def _constant(name: str) -> float:
    return math.nan if name == "NaN" else (math.inf if name == "Infinity" else -math.inf)


def loads_marked(text: str) -> Any:
    """``json.loads`` whose objects remember repeated keys and whose NaN/Infinity read as floats, for
    :func:`record_problem` to name; raises ``json.JSONDecodeError`` (or RecursionError) as ``json.loads``."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)


def record_problem(data: Any) -> str | None:
    """The first problem in data from :func:`loads_marked` (a repeated key, a non-finite number), or None. [text]"""
    for path, obj in _walk(data):
        if isinstance(obj, _Object) and obj.repeated:
            return f"{path or '(top level)'}: key {obj.repeated[0]!r} appears twice in one object; expected each key once"
        if isinstance(obj, float) and not math.isfinite(obj):
            return f"{path}: got {obj!r}; expected a finite number"
    return None


def _load_json(text: str, source: str) -> Any:
    """Parse JSON, refusing repeated keys and ``NaN``/``Infinity`` with the field's path.

    Raises
    ------
    InputError
        Not valid JSON (with line and column), a key repeated in one object, a non-finite number, nesting too deep.
    """
    try:
        data = loads_marked(text)
    except json.JSONDecodeError as e:
        raise InputError(source, [f"line {e.lineno}, column {e.colno}: not JSON ({e.msg})"]) from None
    except RecursionError:
        raise InputError(source, ["nested too deeply; expected a few levels of objects"]) from None
    problems = [f"{path or '(top level)'}: key {k!r} appears twice in one object; expected each key once"
                for path, obj in _walk(data) if isinstance(obj, _Object) for k in obj.repeated]
    problems += [f"{path}: got {value!r}; expected a finite number (NaN, Infinity and overflowing numbers are not figures)"
                 for path, value in _walk(data) if isinstance(value, float) and not math.isfinite(value)]
    if problems:
        raise InputError(source, problems)
    return data


def read_json(path: str | Path, what: str, max_bytes: int = files.TEXT_MAX_BYTES) -> Any:
    """A JSON file through :func:`files.read_text` and :func:`_load_json`."""
    return _load_json(files.read_text(path, what, max_bytes), str(path))


def _walk(data: Any, path: str = ""):
    """(dotted path, value) of every node, depth first, without recursion (data may be deep)."""
    stack = [(path, data)]
    while stack:
        p, v = stack.pop()
        yield p, v
        if isinstance(v, dict):
            stack.extend((f"{p}.{k}" if p else str(k), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((f"{p}[{i}]", x) for i, x in reversed(list(enumerate(v))))


def number_problem(value: Any, max_abs: float = MAX_ABS_NUMBER) -> str | None:
    """Why a number cannot stand for a figure (not finite, or too large); None when it can. [text]

    Examples
    --------
    >>> number_problem(float("inf"))
    'got inf; expected a finite number'
    >>> number_problem(1e300)
    'got 1e+300; expected a number no larger than 1e+15 in size'
    >>> number_problem(40) is None
    True
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:
        return f"got a number of {len(str(abs(value)))} digits; expected a number no larger than {max_abs:g} in size"
    if not math.isfinite(x):
        return f"got {x!r}; expected a finite number"
    if abs(x) > max_abs:
        return f"got {x:g}; expected a number no larger than {max_abs:g} in size"
    return None


def check_numbers(data: Any, source: str, schema: dict | None = None, max_abs: float = MAX_ABS_NUMBER) -> None:
    """Refuse numbers that cannot stand for a figure, naming each field by its dotted path.

    Parameters
    ----------
    data
        Parsed YAML or JSON. [—]
    source
        The file, for messages. [text]
    schema
        A JSON Schema the data should follow; where it says a field is only a number,
        a boolean there is refused, and a text that reads as a number is held to the same
        limits. [—]
    max_abs
        Largest magnitude accepted. [—]

    Raises
    ------
    InputError
        One line per field: ``forecast.peak_rps: got inf; expected a finite number``.
    """
    problems = []
    for path, value in _walk(data):
        where = path or "(top level)"
        problem = number_problem(value, max_abs)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        if schema is None or not isinstance(value, (bool, str)):
            continue
        kinds = _types_at(schema, path)
        if not kinds or not kinds <= {"number", "integer", "null"}:
            continue
        if isinstance(value, bool):
            problems.append(f"{where}: got {str(value).lower()}; expected a number (YAML reads true/false as a yes/no, not 1/0)")
            continue
        try:
            problem = number_problem(float(value.replace("_", "")), max_abs)
        except ValueError:
            continue  # not numeric text: the plan's validation names it
        if problem:
            problems.append(f"{where}: {problem}")
    if problems:
        raise InputError(source, problems)


def _split(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for piece in re.finditer(r"([^.\[\]]+)|\[(\d+)\]", path):
        parts.append(int(piece.group(2)) if piece.group(2) is not None else piece.group(1))
    return parts


def _types_at(schema: dict, path: str) -> set[str] | None:
    """The JSON types a schema allows at a dotted path (``forecast.peak_rps``); None where it does not say.

    Examples
    --------
    >>> _types_at({"properties": {"a": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}, "a") == {"number", "null"}
    True
    """
    nodes = [schema]
    for part in _split(path):
        nxt = []
        for node in _alternatives(schema, nodes):
            if isinstance(part, int):
                if isinstance(node.get("items"), dict):
                    nxt.append(node["items"])
            elif part in node.get("properties", {}):
                nxt.append(node["properties"][part])
            elif isinstance(node.get("additionalProperties"), dict):
                nxt.append(node["additionalProperties"])
        if not nxt:
            return None
        nodes = nxt
    kinds: set[str] = set()
    for node in _alternatives(schema, nodes):
        t = node.get("type")
        if isinstance(t, str):
            kinds.add(t)
        elif isinstance(t, list):
            kinds.update(t)
        elif "enum" in node or "const" in node:
            values = node.get("enum", [node.get("const")])
            kinds.update("boolean" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else
                         "null" if v is None else "string" for v in values)
        else:
            return None  # anything goes here
    return kinds


def _alternatives(root: dict, nodes: list[dict]) -> list[dict]:
    """The nodes with $ref followed and anyOf/oneOf/allOf expanded."""
    out, stack, seen = [], list(nodes), 0
    while stack and seen < 1000:
        seen += 1
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if "$ref" in node and isinstance(node["$ref"], str) and node["$ref"].startswith("#/"):
            target: Any = root
            for key in node["$ref"][2:].split("/"):
                target = target.get(key, {}) if isinstance(target, dict) else {}
            stack.append(target)
            continue
        alts = [a for key in ("anyOf", "oneOf", "allOf") for a in node.get(key, [])]
        if alts:
            stack.extend(alts)
            continue
        out.append(node)
    return out
