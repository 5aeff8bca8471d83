"""Reading ``tokenizer.json`` fields: what every pipeline stage's ``from_json`` shares.

Each reader checks the type of every field it takes (:func:`read_field`) and picks its
component from a table by ``"type"`` (:func:`build_from_table`), so a damaged or hand-written
file gets a :class:`FormatError` naming the stage, the field and what was found.

>>> read_field({"lowercase": True}, "lowercase", bool, where="x")
True
>>> show("a" * 100)
'"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from core.errors import FormatError

__all__ = ["build_from_table", "read_field", "show"]

_REQUIRED: Any = object()
_KIND_NAMES = {bool: "true or false", str: "a string", int: "a whole number", list: "a list",
               dict: "an object", type(None): "null"}  # fmt: skip


def show(value: Any) -> str:
    """``value`` as JSON for an error message, cut after 60 characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def read_field(
    obj: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    *,
    where: str,
    default: Any = _REQUIRED,
) -> Any:
    """``obj[key]``, checked to be of ``kind`` (``default`` when absent, if one is given).

    >>> read_field({"a": True}, "a", bool, where="x")
    True
    >>> read_field({"a": 1}, "a", bool, where="tokenizer.json: normalizer 'Strip'")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: normalizer 'Strip': field 'a' should be true or false, not 1
    """
    if key not in obj:
        if default is _REQUIRED:
            raise FormatError(
                f"{where}: the field {key!r} is missing (Hugging Face requires it too, so the "
                "file is damaged or was written by hand)"
            )
        return default
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # subtle: JSON true is a Python int too; only accept it where a bool is expected
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise FormatError(
            f"{where}: field {key!r} should be {expected}, not {show(value)}"
        )
    return value


def build_from_table(
    obj: dict[str, Any], table: Mapping[str, Callable[[dict[str, Any], str], Any]], *,
    stage: str, name: str,
) -> Any:
    """The component ``table[obj["type"]]`` builds (normalizer, pre-tokenizer, decoder), or
    a :class:`FormatError` naming the type and listing the supported ones."""
    kind = obj.get("type")
    build = table.get(kind) if isinstance(kind, str) else None
    if build is None:
        raise FormatError(
            f"{name}: {stage} type {kind!r} is not supported yet "
            f"(supported: {', '.join(sorted(table))})"
        )
    return build(obj, f"{name}: {stage} {kind!r}")

