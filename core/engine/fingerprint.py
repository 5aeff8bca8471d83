"""Content fingerprints: a short hash of everything that changes a tokenizer's output.

Each tokenizer lists its parts (vocab, merges or scores, specials, pattern, template, every
pipeline stage) and :func:`fingerprint_of` hashes a canonical form of them. Stages are
described by their configuration, not by the file they came from, so a pipeline built in
code has one too, and two pipelines that differ only by a normalizer differ.

The canonical form of a value (:func:`canonical`):

- ``None``, ``bool``, ``int``, ``float``, ``str`` and ``bytes`` are themselves;
- lists, tuples, dicts and sets keep their items (dicts and sets sorted, so the order they
  were built in does not count);
- a dataclass is its type and its compared fields (``field(compare=False)`` marks a cache
  or a derived table, such as a compiled regex, and is left out);
- a compiled regex is its pattern and flags;
- any other object is its type and its *public* attributes: a stage keeps what changes its
  output in public attributes, and caches and derived tables in ``_private`` ones (an object
  whose attributes are made on first read lists them by a ``_fingerprint_attributes()``
  method, so it hashes as when they are made);
- a function, or an object with no attributes to read, is its repr (so two of them never
  look alike, at the price of two equal ones looking different);
- a list, tuple, dict or set of more than :data:`BIG` items is the SHA-256 of its form
  (of its float64 bytes when all its items are floats), computed once per object in a walk:
  a 32,000-piece model's columns are reached from its model, pre-tokenizer and decoder, and
  printing them in full each time was most of the time a fingerprint took. The digest's
  form, ``("digest", (tag, size, hex))``, is one no value of a user's can have: theirs are
  ``(tag, items)`` with a tag other than ``"digest"``, or, inside a list of them, tuples of
  atoms only, never one holding a tuple. So it names only the collection it stands for.

>>> fingerprint_of({"b": 2, "a": 1}) == fingerprint_of({"a": 1, "b": 2})
True
>>> fingerprint_of([1, 2]) == fingerprint_of((1, 2)), len(fingerprint_of("x"))
(False, 16)
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from array import array
from collections.abc import Mapping
from enum import Enum
from functools import partial
from itertools import chain
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, cast

from core.engine.regex_compat import HeldPattern, regex

__all__ = ["BIG", "canonical", "fingerprint_of"]

#: Collections of more items than this are described by a digest (see the module docstring).
BIG = 1024

#: Values that are their own canonical form (exact types: a subclass, such as an enum that
#: is also a str, is described by its type).
_ATOMS = frozenset({type(None), bool, int, float, str, bytes})
_PATTERNS = (re.Pattern, type(regex.compile("")), HeldPattern)
_OPAQUE = (FunctionType, MethodType, BuiltinFunctionType, partial)
_CYCLE = "<cycle>"


def fingerprint_of(*parts: object) -> str:
    """16 hex digits of the SHA-256 of ``parts``' canonical form.

    >>> fingerprint_of("Tokenizer", {97: b"a"}) == fingerprint_of("Tokenizer", {97: b"b"})
    False
    """
    # subtle: the repr of a structure of atoms, tuples and lists is unambiguous (Python
    # literal syntax; a str's repr escapes lone surrogates), and one repr call runs in C
    # however large the vocabulary
    text = repr(canonical(parts))
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def canonical(value: object) -> object:
    """``value`` as nested tuples of atoms, the same for equal content (see the module
    docstring). Shared objects are described in full wherever they occur, so how a
    tokenizer's parts share objects never changes its fingerprint.

    >>> from core.engine.template import Template
    >>> canonical(Template((1,), (), "<s> $A"))[1]
    (('prefix', ('tuple', (1,))), ('suffix', ('tuple', ())), ('text', '<s> $A'))
    >>> canonical({"b", "a"}), canonical({2: "x", 1: None})
    (('set', ('a', 'b')), ('dict', ((1, None), (2, 'x'))))
    """
    return _Walker().canon(value)


class _Walker:
    """One walk over one value: remembers each object's canonical form (so an object
    reached twice costs once) and the objects on the current path (to stop at a cycle)."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[object, object]] = {}  # id -> (object, its form)
        self._open: set[int] = set()

    def canon(self, value: object) -> object:
        if type(value) in _ATOMS:
            return value
        key = id(value)
        found = self._done.get(key)
        if found is not None:
            return found[1]
        if key in self._open:
            return (_CYCLE, _type_name(value))
        self._open.add(key)
        form = self._form(value)
        self._open.discard(key)
        # (the object is kept with its form: while it lives, its id names nothing else)
        self._done[key] = (value, form)
        return form

    def _form(self, value: Any) -> object:
        if isinstance(value, (list, tuple)):
            tag = "list" if isinstance(value, list) else "tuple"
            return _digested(tag, self._items(value))
        if isinstance(value, Mapping):
            return _digested("dict", self._mapping(value))
        if isinstance(value, (set, frozenset)):
            return _digested("set", self._sorted(value))
        if isinstance(value, Enum):
            return (_type_name(value), self.canon(value.value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return (_type_name(value), tuple(
                (f.name, self.canon(getattr(value, f.name)))
                for f in dataclasses.fields(value) if f.compare
            ))  # fmt: skip
        if isinstance(value, _PATTERNS):
            return ("regex", value.pattern, int(value.flags))
        if isinstance(value, type):
            return ("class", value.__qualname__)
        listed = getattr(value, "_fingerprint_attributes", None)
        attributes = getattr(value, "__dict__", None) if listed is None else listed()
        if attributes is None or isinstance(value, _OPAQUE):
            # subtle: by repr, which names a function by its address: two different ones
            # never look alike (their attributes would: a function's __dict__ is empty)
            return ("opaque", _type_name(value), repr(value))
        return (_type_name(value), tuple(
            (name, self.canon(attributes[name]))
            for name in sorted(attributes) if not name.startswith("_")
        ))  # fmt: skip

    def _items(self, items: list[Any] | tuple[Any, ...]) -> tuple[object, ...]:
        # fast path: a merge list or a score table is atoms, or tuples of atoms
        types = set(map(type, items))
        if types <= _ATOMS or (types == {tuple} and _all_atoms(chain.from_iterable(items))):
            return tuple(items)
        return tuple(map(self.canon, items))

    def _mapping(self, mapping: Mapping[Any, Any]) -> tuple[object, ...]:
        keys = set(map(type, mapping))
        if len(keys) == 1 and keys <= _ATOMS and _all_atoms(mapping.values()):
            return tuple(sorted(mapping.items()))  # fast path: a vocabulary
        pairs = [(self.canon(k), self.canon(v)) for k, v in mapping.items()]
        return tuple(sorted(pairs, key=repr))

    def _sorted(self, items: Any) -> tuple[object, ...]:
        types = set(map(type, items))
        if len(types) == 1 and types <= _ATOMS:
            return tuple(sorted(items))
        return tuple(sorted(map(self.canon, items), key=repr))


def _digested(tag: str, items: tuple[object, ...]) -> object:
    """``(tag, items)``, or its digest form for more than :data:`BIG` items.

    >>> _digested("list", (1.5, 2.5))
    ('list', (1.5, 2.5))
    >>> _digested("list", (0.5,) * (BIG + 1))[1][:2], _digested("list", (1,) * (BIG + 1))[1][2][:4]
    (('list', 1025), 'repr')
    """
    if len(items) <= BIG:
        return (tag, items)
    if set(map(type, items)) == {float}:  # (a score column: its bytes, not 32,000 reprs)
        data, how = b"f64:" + array("d", cast("list[float]", items)).tobytes(), "f64"
    else:
        data, how = repr(items).encode("utf-8", "backslashreplace"), "repr"
    return ("digest", (tag, len(items), f"{how}:{hashlib.sha256(data).hexdigest()}"))


def _all_atoms(values: Any) -> bool:
    return set(map(type, values)) <= _ATOMS


def _type_name(value: object) -> str:
    # subtle: the class's name without its module, so a fingerprint survives moving a module
    # (chat formats and links key on it); the attributes beside it tell two classes apart
    return type(value).__qualname__
