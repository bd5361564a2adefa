"""Values out of a JSON file for shell scripts (``pybin/json_get.py``), so that no script
greps JSON: ``history.-1.cv_loss`` is key ``history``, its last element, then ``cv_loss``."""
from __future__ import annotations

import json
from typing import Any

from hybridasr.errors import FormatError


def read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise FormatError(f"{path}: cannot read ({e.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: not valid JSON ({e})") from None


def json_value(doc: Any, key: str, what: str = "the JSON document") -> Any:
    """The value at ``key``: names separated by dots, an integer (negative from the end)
    indexing a list; a FormatError naming ``what`` and the key when it is not there."""
    value = doc
    walked = []
    for part in key.split("."):
        where = ".".join(walked) or "the top level"
        if isinstance(value, dict):
            if part not in value:
                raise FormatError(f"{what}: no key {key!r} ({where} has no {part!r}; it has: "
                                  f"{', '.join(sorted(map(str, value))) or 'nothing'})")
            value = value[part]
        elif isinstance(value, list):
            try:
                value = value[int(part)]
            except (ValueError, IndexError):
                raise FormatError(f"{what}: no key {key!r} ({where} is a list of "
                                  f"{len(value)}: {part!r} is not an index into it)") from None
        else:
            raise FormatError(f"{what}: no key {key!r} ({where} is {json.dumps(value)}, "
                              f"not an object or a list)")
        walked.append(part)
    return value


def shell_word(value: Any) -> str:
    """How a shell script sees a value: a string as it is, anything else as JSON (``true``,
    ``false``, ``null``, ``3``, ``0.25``, ``[1, 2]``)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
