"""Post-processors: the tokens ``add_special_tokens=True`` puts around one sequence.

For a single sequence every Hugging Face post-processor comes down to IDs before the text
and IDs after it, so one small :class:`Template` holds the result:

- ``TemplateProcessing``: its ``single`` template, e.g. ``"<s> $A"`` (Llama 2, Llama 3) or
  ``"[CLS] $A [SEP]"``; each special token there may stand for several IDs;
- ``BertProcessing`` / ``RobertaProcessing``: ``cls $A sep``;
- ``ByteLevel`` (it only trims offsets) and none at all: nothing is added;
- ``Sequence``: the processors in turn, each on what the one before made.

Each is a class with the :class:`PostProcessor` protocol (``process``), read from its JSON
by one row of ``_READERS``.

>>> t = post_processor_from_json(
...     {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]})
>>> t
Template(prefix=(101,), suffix=(102,), text='[CLS] $A [SEP]')
>>> t.apply([7, 8])
[101, 7, 8, 102]

subtle: in a ``Sequence``, Hugging Face hands each processor the list of *parts* the one
before made, unmerged, and a ``TemplateProcessing`` picks its template by the number of
parts. After ``"<s> $A"`` (two parts, ``<s>`` and the text), a second template applies
its *pair* template to them. We replay that on symbolic parts (the text is a marker) to
get the same IDs, and refuse what Hugging Face itself cannot run (three parts panic).

Only what changes IDs is modelled: ``trim_offsets`` (RoBERTa, ByteLevel) moves offsets off
the spaces of ``Ġ`` tokens, and type IDs do not exist for one sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from core.engine.template import Template  # one home: the fast Tokenizer uses it too
from core.errors import FormatError

__all__ = [
    "BertProcessing",
    "ByteLevel",
    "Part",
    "PostProcessor",
    "Sequence",
    "Template",
    "TemplateProcessing",
    "post_processor_from_json",
]

_SUPPORTED = (
    "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel and Sequence are"
)


# ----------------------------------------------------------------------------------------
# Replaying Hugging Face's processors on symbolic encodings
# ----------------------------------------------------------------------------------------

# A part ("encoding") is a tuple of items: (id, token) pairs, or _TEXT for the sequence.
_TEXT = None
_Item = tuple[int, str] | None
#: One encoding of a processor's input or output, symbolic: ``(id, token)`` items and one
#: ``None`` standing for the text.
Part = tuple[_Item, ...]
_Lookup = Callable[[str], "int | None"] | None


class _Unrunnable(Exception):
    """Hugging Face would panic or fail encoding with this processor."""


@runtime_checkable
class PostProcessor(Protocol):
    """What every post-processor here offers, as Hugging Face's ``PostProcessor`` trait:
    ``process(parts, add_special_tokens)``, the parts another processor (or the encoder)
    made -> the parts this one makes (``process_encodings`` on symbolic encodings).
    :func:`post_processor_from_json` runs one on a single text to get its :class:`Template`.

    >>> BertProcessing((101, "[CLS]"), (102, "[SEP]")).process([(None,)], True)
    [((101, '[CLS]'), None, (102, '[SEP]'))]
    """

    def process(self, parts: list[Part], add_special_tokens: bool) -> list[Part]:
        """The parts after this processor (unchanged ones when it adds nothing)."""
        ...


@dataclass(frozen=True)
class BertProcessing:
    """``BertProcessing`` / ``RobertaProcessing`` (``roberta=True``): ``cls A sep``, a
    pair's second part gets ``B sep`` (BERT) or ``sep B sep`` (RoBERTa)."""

    cls: _Item
    sep: _Item
    roberta: bool = False

    def process(self, parts: list[Part], add_special_tokens: bool) -> list[Part]:
        if not add_special_tokens:
            return parts
        cls, sep = self.cls, self.sep
        out = [(cls, *parts[0], sep)] if parts else []
        for part in parts[1:]:
            out.append(((sep,) if self.roberta else ()) + part + (sep,))
        return out


@dataclass(frozen=True)
class ByteLevel:
    """``ByteLevel``: it only trims offsets, so the parts stay as they are."""

    def process(self, parts: list[Part], add_special_tokens: bool) -> list[Part]:
        return parts


@dataclass(frozen=True)
class TemplateProcessing:
    """``TemplateProcessing``: ``single`` for one part, ``pair`` for two; each template
    piece (``("sequence", "A")`` or ``("special", items)``) becomes a part of its own (a
    special token only when adding them)."""

    single: tuple[tuple[str, Any], ...]
    pair: tuple[tuple[str, Any], ...]

    def process(self, parts: list[Part], add_special_tokens: bool) -> list[Part]:
        if len(parts) not in (1, 2):
            raise _Unrunnable(f"it gets {len(parts)} parts (Hugging Face panics)")
        out: list[Part] = []
        for kind, value in self.single if len(parts) == 1 else self.pair:
            if kind == "sequence":
                index = 0 if value == "A" else 1
                if index >= len(parts):
                    raise _Unrunnable(
                        "its single template uses $B (Hugging Face panics)"
                    )
                out.append(parts[index])
            elif add_special_tokens:
                out.append(value)
        return out


@dataclass(frozen=True)
class Sequence:
    """``Sequence``: the processors in turn, each on the parts the one before made."""

    processors: tuple[PostProcessor, ...]

    def process(self, parts: list[Part], add_special_tokens: bool) -> list[Part]:
        for step in self.processors:
            parts = step.process(parts, add_special_tokens)
        return parts


# ----------------------------------------------------------------------------------------
# Reading the JSON
# ----------------------------------------------------------------------------------------


def _pair(value: object, key: str, name: str) -> _Item:
    """A ``["[SEP]", 102]`` pair of BertProcessing / RobertaProcessing."""
    if (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], int)
        and not isinstance(value[1], bool)
        and value[1] >= 0
    ):
        return value[1], value[0]
    raise FormatError(
        f"{name}: post_processor.{key} is {value!r}; expected [token, id] like "
        '["[SEP]", 102]'
    )


def _piece(item: object, name: str, where: str) -> tuple[str, str]:
    """``("sequence", "A")`` or ``("special", "<s>")`` from one template item: the JSON
    form ``{"Sequence": {"id": "A"}}`` / ``{"SpecialToken": {"id": "<s>"}}``, or
    (leniently) the string form ``"$A"`` / ``"<s>:0"``."""
    if isinstance(item, dict) and len(item) == 1:
        ((tag, body),) = item.items()
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            if tag == "Sequence" and body["id"] in ("A", "B"):
                return "sequence", body["id"]
            if tag == "SpecialToken":
                return "special", body["id"]
    if isinstance(item, str) and item:
        head = item.rsplit(":", 1)[0] if item.count(":") == 1 else item
        if not head.startswith("$"):
            return "special", head
        rest = head[1:]
        if rest in ("", "A", "a") or rest.isdigit():
            return "sequence", "A"
        if rest in ("B", "b"):
            return "sequence", "B"
    raise FormatError(
        f"{name}: post_processor {where} is {item!r}; expected "
        '{"Sequence": {"id": "A", ...}} or {"SpecialToken": {"id": "<s>", ...}}'
    )


def _special(specials: dict[str, Any], token: str, name: str, lookup: _Lookup) -> Part:
    """The items a template's special token stands for (its ``ids`` and ``tokens``)."""
    entry = specials.get(token)
    if not isinstance(entry, dict):
        raise FormatError(
            f"{name}: post_processor template uses {token!r}, which is not in its "
            "special_tokens; add it there with its ids"
        )
    tokens = entry.get("tokens")
    ids = entry.get("ids")
    if ids is None and lookup is not None:
        # lenient: Hugging Face needs "ids"; a hand-written file may list only tokens
        found = [lookup(t) for t in tokens or [token]]
        ids = None if None in found else found
    if not isinstance(ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids
    ):
        raise FormatError(
            f"{name}: post_processor special_tokens[{token!r}].ids is {ids!r}; expected a "
            "list of token IDs"
        )
    if not isinstance(tokens, list) or len(tokens) != len(ids):
        tokens = [token] * len(ids)
    return tuple((i, str(t)) for i, t in zip(ids, tokens))


def _template_pieces(
    obj: dict[str, Any], key: str, default: str, name: str, lookup: _Lookup
) -> list[tuple[str, Any]]:
    raw = obj.get(key, default)
    if isinstance(raw, str):
        raw = raw.split(" ")
    if not isinstance(raw, list):
        raise FormatError(f"{name}: post_processor.{key} must be a list, not {raw!r}")
    specials = obj.get("special_tokens") or {}
    if not isinstance(specials, dict):
        raise FormatError(f"{name}: post_processor.special_tokens must be an object")
    out: list[tuple[str, Any]] = []
    for k, item in enumerate(raw):
        kind, value = _piece(item, name, f"{key}[{k}]")
        out.append(
            (
                kind,
                _special(specials, value, name, lookup) if kind == "special" else value,
            )
        )
    return out


def _template_processing(obj: dict[str, Any], name: str, lookup: _Lookup) -> PostProcessor:
    single = _template_pieces(obj, "single", "$A", name, lookup)
    pair = _template_pieces(obj, "pair", "$A $B:1", name, lookup)
    return TemplateProcessing(tuple(single), tuple(pair))


def _bert_processing(obj: dict[str, Any], name: str, lookup: _Lookup) -> PostProcessor:
    cls = _pair(obj.get("cls"), "cls", name)
    sep = _pair(obj.get("sep"), "sep", name)
    # subtle: Hugging Face reads these untagged, trying RoBERTa first and ignoring
    # "type", so RoBERTa's treatment follows from its two extra fields being there
    roberta = all(isinstance(obj.get(k), bool) for k in ("trim_offsets", "add_prefix_space"))
    return BertProcessing(cls, sep, roberta=roberta)


def _sequence(obj: dict[str, Any], name: str, lookup: _Lookup) -> PostProcessor:
    steps = obj.get("processors")
    if not isinstance(steps, list):
        raise FormatError(f"{name}: post_processor Sequence needs a list of processors")
    return Sequence(tuple(_processor(step, name, lookup) for step in steps))


#: ``"type"`` -> the reader of such a section.
_READERS: dict[str, Callable[[dict[str, Any], str, _Lookup], PostProcessor]] = {
    "TemplateProcessing": _template_processing,
    "BertProcessing": _bert_processing,
    "RobertaProcessing": _bert_processing,
    "ByteLevel": lambda obj, name, lookup: ByteLevel(),
    "Sequence": _sequence,
}


def _processor(obj: object, name: str, lookup: _Lookup) -> PostProcessor:
    kind = obj.get("type") if isinstance(obj, dict) else None
    read = _READERS.get(kind) if isinstance(kind, str) else None
    if not isinstance(obj, dict) or read is None:
        shown = kind if kind is not None else obj
        raise FormatError(
            f"{name}: post_processor {shown!r} is not supported; {_SUPPORTED}"
        )
    return read(obj, name, lookup)


def post_processor_from_json(
    obj: object,
    token_to_id: Callable[[str], int | None] | None = None,
    *,
    name: str = "tokenizer.json",
) -> Template:
    """The :class:`Template` of a ``tokenizer.json``'s ``"post_processor"`` section (the
    identity for ``null``).

    The IDs come from the file, as Hugging Face takes them (it does not check them
    against the vocab). ``token_to_id`` is only a fallback for a hand-written template
    whose special token lists ``tokens`` but no ``ids``.

    >>> post_processor_from_json({
    ...     "type": "TemplateProcessing",
    ...     "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
    ...                {"Sequence": {"id": "A", "type_id": 0}}],
    ...     "pair": [{"Sequence": {"id": "A", "type_id": 0}},
    ...              {"Sequence": {"id": "B", "type_id": 1}}],
    ...     "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})
    Template(prefix=(1,), suffix=(), text='<s> $A')
    >>> post_processor_from_json(None)
    Template(prefix=(), suffix=(), text='$A')
    """
    if obj is None:
        return Template()
    run = _processor(obj, name, token_to_id).process
    try:
        plain = [item for part in run([(_TEXT,)], False) for item in part]
        added = [item for part in run([(_TEXT,)], True) for item in part]
    except _Unrunnable as err:
        raise FormatError(
            f"{name}: post_processor cannot encode a single text: {err}; a single "
            "sequence needs one $A"
        ) from None
    if plain != [_TEXT] or added.count(_TEXT) != 1:
        raise FormatError(
            f"{name}: post_processor must keep the text exactly once (one $A, no $B) for "
            f"a single sequence; it gives {_show(added)!r}"
        )
    at = added.index(_TEXT)
    return Template(
        tuple(item[0] for item in added[:at]),  # type: ignore[index]
        tuple(item[0] for item in added[at + 1 :]),  # type: ignore[index]
        _show(added),
    )


def _show(items: list[_Item]) -> str:
    return " ".join("$A" if item is _TEXT else item[1] for item in items)
