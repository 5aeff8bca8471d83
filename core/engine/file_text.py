"""Reading text-based tokenizer files: bytes to str, str to JSON, with errors that say where."""

from __future__ import annotations

import json
from typing import Any

from core.errors import FormatError


def as_text(data: bytes | str, name: str) -> str:
    """``data`` as str (UTF-8, a BOM allowed); a bad byte is named with its line.

    >>> as_text(b"\\xef\\xbb\\xbfhi", "f.txt")
    'hi'
    """
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise FormatError(
            f"{name}: not UTF-8 text (bad byte {data[err.start]:#04x} on line {line}); "
            "tokenizer files are UTF-8"
        ) from None


def parse_json(data: bytes | str, name: str) -> Any:
    """The JSON document in ``data``; a syntax error is named with its line and column.

    >>> parse_json('{"a": 1}', "f.json")
    {'a': 1}
    """
    try:
        return json.loads(as_text(data, name))
    except json.JSONDecodeError as err:
        raise FormatError(
            f"{name}: not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from None
