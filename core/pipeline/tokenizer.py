"""The Hugging Face pipeline put together: :class:`PipelineTokenizer`.

Encoding one text goes as in ``tokenizers`` (``TokenizerImpl::encode_single_sequence``):

1. added tokens with ``normalized: false`` are cut out of the *original* text (the
   longest one wins where several start at the same place; ``single_word``, ``lstrip``
   and ``rstrip`` as in ``added_vocabulary.rs``: :mod:`core.pipeline.added_tokens`);
2. each piece between them is normalized *on its own* (so a ``Prepend("▁")`` normalizer
   prepends to every piece, as Hugging Face does), then added tokens with
   ``normalized: true`` are cut out of the normalized pieces;
3. the pre-tokenizer splits each remaining piece into words, and the model turns each
   word into tokens;
4. ``add_special_tokens=True`` wraps the IDs in the post-processor's :class:`Template`.

Decoding looks every ID up (added tokens first), drops special tokens if asked, and runs
the *whole* list, added tokens included, through the decoder, as ``Tokenizer::decode``
does.

>>> from core.pipeline.models import WordLevelModel
>>> tok = PipelineTokenizer(model=WordLevelModel({"<unk>": 0, "hi": 1}),
...                         added_tokens=[AddedToken("[X]", special=True)])
>>> tok.encode("hi[X]hi"), tok.special_token_ids
([1, 2, 1], {'[X]': 2})
>>> tok.decode([1, 2, 1]), tok.decode([1, 2, 1], skip_special_tokens=True)
('hi [X] hi', 'hi hi')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from core.chat import ChatMethods, with_chat
from core.engine.basics import BULK_TEXT, check_id, gc_paused
from core.engine.bytes_unicode import from_gpt2_str, unicode_to_bytes
from core.engine.details import DecodeDetails, EncodingDetails, MergeNode, MergeStep
from core.engine.fingerprint import fingerprint_of
from core.errors import PlaygroundError
from core.interface import Capabilities
from core.pipeline import details
from core.pipeline.added_tokens import (
    AddedToken,
    AddedTokenMatcher,
    split_at_added,
)
from core.pipeline.decoders import decode_tokens
from core.pipeline.fast_encode import EncodePlan, encode_plan
from core.pipeline.models.base import Model, is_merge_model, is_scored_model
from core.pipeline.piece import Piece, Span, cover
from core.pipeline.post_processors import Template

if TYPE_CHECKING:
    from core.pipeline.models.unigram import SplitPaths

__all__ = [
    "AddedToken",  # (defined in core.pipeline.added_tokens; the constructor takes them)
    "PipelineTokenizer",
    "PreToken",
]

Token = tuple[int, int, int]  # (id, start, end) in characters of the original text

_SURROGATE = re.compile("[\ud800-\udfff]")
_BYTE_TOKEN = re.compile(r"<0x([0-9A-F]{2})>")
# What an unknown ID decodes to. Hugging Face skips such IDs (and Python's binding raises
# on negative ones); showing U+FFFD keeps the user's mistake visible. It goes through the
# decoder like any token, so the text around it decodes exactly as without it.
_UNKNOWN_ID_TOKEN = "\ufffd"
# A token decoded after this one shows what it adds in the middle of a text: a decoder
# treats the first token specially (drops Llama's leading space, keeps "##").
_ANCHOR = "\x00"
_NO_TEMPLATE = Template()
#: The attributes an encode plan is made from: setting one drops the plan.
_PLAN_INPUTS = frozenset(
    {"model", "normalizer", "pre_tokenizer", "_added", "_plain_matcher", "_normalized_matcher"}
)


class PreToken(NamedTuple):
    """One word the model saw (``text``: after normalization), with its span in the
    original text; ``added_id`` is the ID when it is an added token (the model never
    sees those)."""

    text: str
    span: Span
    added_id: int | None


class PipelineTokenizer(ChatMethods):  # ChatMethods: chat_template, apply_chat_template
    """A Hugging Face-style pipeline: normalizer, pre-tokenizer, model, template, decoder.

    Any objects with the stage protocols work: ``normalizer.normalize(Piece) -> Piece``,
    ``pre_tokenizer.split(list[Piece]) -> list[Piece]``, a ``model`` that is a
    :class:`~core.pipeline.models.base.Model` (``tokenize(str) -> [(id, start, end)]``,
    ``vocab``, ``id_to_token``, ...) and ``decoder.decode_chain(list[str]) -> list[str]``.
    ``pattern`` describes the pre-tokenizer for display. :attr:`capabilities` follow from
    the model and the chat template.
    """

    def __init__(
        self,
        *,
        model: Model,
        normalizer: Any = None,
        pre_tokenizer: Any = None,
        template: Template = _NO_TEMPLATE,
        decoder: Any = None,
        added_tokens: Iterable[AddedToken] = (),
        name: str = "",
        kind: str = "",
        pattern: str = "",
    ) -> None:
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.template = template
        self.decoder = decoder
        self.name = name
        self.kind = kind or model.kind
        self.pattern = pattern or _describe(pre_tokenizer)
        self._add_tokens(list(added_tokens))
        self._vocab: dict[int, bytes] | None = None
        self._pieces: dict[int, str] | None = None
        self._strings: dict[int, str] | None = None

    # ------------------------------------------------------------------------------------
    # Added tokens
    # ------------------------------------------------------------------------------------

    def _add_tokens(self, tokens: list[AddedToken]) -> None:
        """Number the added tokens as ``AddedVocabulary::add_tokens`` does, and build the
        two matchers (original text / normalized text)."""
        model_vocab = self.model.vocab
        next_id = len(model_vocab)  # Hugging Face counts entries, not max ID + 1
        self._added_ids: dict[str, int] = {}  # content -> ID
        self._added: dict[int, AddedToken] = {}  # ID -> token (the last one listed)
        self._special_contents: set[str] = set()
        for token in tokens:
            if not isinstance(token, AddedToken):
                raise PlaygroundError(
                    f"added_tokens holds {token!r}, not an AddedToken"
                )
            if not token.content:
                continue  # Hugging Face ignores empty added tokens
            token_id = token.id
            if token_id is None:
                token_id = self._added_ids.get(token.content)
            if token_id is None:
                token_id = model_vocab.get(token.content)
            if token_id is None:
                token_id = next_id
                next_id += 1
            self._added_ids[token.content] = token_id
            self._added[token_id] = token
            if token.special:
                self._special_contents.add(token.content)
        # what decode and id_to_token use: the normalized form of a normalized token
        # (Hugging Face's normalized_cache), so that the decoder can undo it
        self._added_strings: dict[int, str] = {}
        plain: dict[str, int] = {}
        normalized: dict[str, int] = {}
        for token_id, token in self._added.items():
            text = token.content
            if token.normalized and self.normalizer is not None:
                text = self.normalizer.normalize(Piece.of(text)).text
            self._added_strings[token_id] = text
            if token.normalized:
                normalized[text] = token_id
            else:
                plain[text] = token_id
        self._plain_matcher = AddedTokenMatcher(plain)
        self._normalized_matcher = AddedTokenMatcher(normalized)
        self.special_tokens: list[str] = [
            self._added[i].content
            for i in sorted(self._added)
            if self._added[i].special
        ]
        self.special_token_ids: dict[str, int] = {
            t: self._added_ids[t] for t in self.special_tokens
        }

    @property
    def added_tokens(self) -> dict[int, AddedToken]:
        """ID -> added token (special or not), as numbered."""
        return dict(self._added)

    # ------------------------------------------------------------------------------------
    # Vocabulary views
    # ------------------------------------------------------------------------------------

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string (added tokens first), or ``None``."""
        found = self._added_ids.get(token)
        return found if found is not None else self.model.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID (an added token's normalized form, as in Hugging
        Face), or ``None``."""
        found = self._added_strings.get(token_id)
        return found if found is not None else self.model.id_to_token(token_id)

    @property
    def pieces(self) -> dict[int, str]:
        """ID -> the token as the file spells it (``"▁the"``, ``"##ing"``, ``"Ġthe"``), by
        ID. Computed on first use; do not modify it."""
        if self._pieces is None:
            out = _model_tokens(self.model)
            out.update((i, t.content) for i, t in self._added.items())
            self._pieces = dict(sorted(out.items()))
        return self._pieces

    def _decode_strings(self) -> dict[int, str]:
        """ID -> the string decode hands to the decoder (:meth:`id_to_token` as a table)."""
        if self._strings is None:
            table = _model_tokens(self.model)
            table.update(self._added_strings)
            self._strings = table
        return self._strings

    @property
    def n_vocab(self) -> int:
        """One more than the largest ID."""
        top = max(self.model.vocab.values(), default=-1)
        return max(top, max(self._added, default=-1)) + 1

    @property
    def vocab(self) -> dict[int, bytes]:
        """ID -> the bytes the token adds to a decoded text, in the middle of it: ``▁`` ->
        ``b" "``, ``<0x0A>`` -> ``b"\\n"``, ``##ing`` -> ``b"ing"``, ``Ġthe`` -> ``b" the"``;
        an added token -> its text. (A WordPiece word shows the space its decoder puts
        before it: ``the`` -> ``b" the"``.) Computed on first use."""
        if self._vocab is None:
            self._vocab = self._shown_vocab()
        return self._vocab

    def _shown_vocab(self) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        anchor = decode_tokens(self.decoder, [_ANCHOR]) if self.decoder else ""
        gpt2 = unicode_to_bytes()
        for token_id, token in self.pieces.items():
            if token_id in self._added:
                out[token_id] = token.encode("utf-8")
                continue
            byte = _BYTE_TOKEN.fullmatch(token)
            if byte and self.model.byte_fallback:
                out[token_id] = bytes([int(byte.group(1), 16)])
                continue
            if self.decoder is None:
                out[token_id] = token.encode("utf-8")
                continue
            text = decode_tokens(self.decoder, [_ANCHOR, token])
            text = text.removeprefix(anchor)
            if (
                "\ufffd" in text
                and "\ufffd" not in token
                and all(c in gpt2 for c in token)
            ):
                # part of a UTF-8 character in a byte-level vocab: its raw bytes
                out[token_id] = from_gpt2_str(token)
            else:
                out[token_id] = text.encode("utf-8")
        return out

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The model's merges in rank order, spelled as :attr:`vocab` spells tokens
        (``[]`` for a model without merges)."""
        pairs = self.model.merges if is_merge_model(self.model) else ()
        ids = self.model.vocab
        shown = self.vocab
        return [(shown[ids[a]], shown[ids[b]]) for a, b in pairs]

    # ------------------------------------------------------------------------------------
    # What the pages draw (core.pipeline.details; the same data classes as core.engine.details)
    # ------------------------------------------------------------------------------------

    def encode_details(
        self, text: str, *, add_special_tokens: bool = False
    ) -> EncodingDetails:
        """Per-token spans, file spellings and partial-UTF-8 groups of ``text``."""
        return details.encode_details(self, text, add_special_tokens=add_special_tokens)

    def decode_details(self, ids: Iterable[int]) -> DecodeDetails:
        """Per-ID pieces and the origin of every U+FFFD in :meth:`decode`."""
        return details.decode_details(self, ids)

    def merge_trace(self, pretoken: str) -> list[MergeStep]:
        """The merges the model makes in the words of ``pretoken`` ([] for WordPiece)."""
        return details.merge_trace(self, pretoken)

    def merge_tree(self, token_id: int) -> MergeNode:
        """How the model's merges build token ``token_id``."""
        return details.merge_tree(self, token_id)

    def split_paths(self, pretoken: str) -> list[SplitPaths]:
        """Unigram's "why this split": the best path and the next best of each word of
        ``pretoken`` ([] for a model without scores)."""
        return details.split_paths(self, pretoken)

    def score(self, token_id: int) -> float | None:
        """The model's score for piece ``token_id`` (a Unigram log-probability); ``None``
        for an added token, an ID outside the vocabulary, or a model without scores."""
        model = self.model
        if not is_scored_model(model) or token_id in self._added:
            return None
        return model.score(token_id)

    # ------------------------------------------------------------------------------------
    # The door every tokenizer shares (core.interface.TokenizerInterface)
    # ------------------------------------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        """What the pages can show, worked out here alone (no loader sets it): details;
        ``merges`` and ``scores`` as the model declares them (BPE, Unigram:
        :class:`~core.pipeline.models.base.ModelCapabilities`); ``chat`` with a chat
        template. No replay, export or library: the file is the format.

        >>> from core.pipeline.models import WordLevelModel
        >>> PipelineTokenizer(model=WordLevelModel({"<unk>": 0})).capabilities.merges
        False
        """
        model = self.model.capabilities
        return with_chat(self, Capabilities(details=True, merges=model.merges,
                                            scores=model.scores))  # fmt: skip
    #: Not given yet: Compare counts the baselines' unknown tokens only (a WordPiece
    #: [UNK] is not counted), as before the interface existed.
    unk_id: int | None = None
    _fingerprint: str | None = None  # computed on first use

    def id_to_piece(self, token_id: int) -> str:
        """The token as the file spells it (``"▁the"``, ``"##ing"``, an added token's
        content); ``""`` for an ID outside the vocabulary."""
        return self.pieces.get(token_id, "")

    def fingerprint(self) -> str:
        """A content hash of every stage's configuration (normalizer, pre-tokenizer, model
        with its vocab and merges or scores, template, decoder) and the added and special
        tokens: two pipelines that differ by a normalizer alone differ. A pipeline built
        in code has one as well as one read from a file. Computed once, on first use
        (loaders finish setting the template and special tokens before).

        >>> from core.pipeline.models import WordLevelModel
        >>> from core.pipeline.normalizers import Lowercase
        >>> vocab = {"<unk>": 0, "hi": 1}
        >>> plain = PipelineTokenizer(model=WordLevelModel(vocab))
        >>> lower = PipelineTokenizer(model=WordLevelModel(vocab), normalizer=Lowercase())
        >>> plain.fingerprint() == lower.fingerprint()
        False
        """
        if self._fingerprint is None:
            self._fingerprint = fingerprint_of(
                "PipelineTokenizer", self.normalizer, self.pre_tokenizer, self.model,
                self.template, self.decoder, self._added, self._added_ids,
                self.special_token_ids,
            )  # fmt: skip
        return self._fingerprint

    def __repr__(self) -> str:
        return (
            f"PipelineTokenizer(name={self.name!r}, kind={self.kind!r}, "
            f"n_vocab={self.n_vocab}, template={self.template.text!r})"
        )

    # ------------------------------------------------------------------------------------
    # Encoding
    # ------------------------------------------------------------------------------------

    def _segments(self, text: str) -> Iterator[tuple[Piece, int | None]]:
        """The pieces the model sees, in order: each word (normalized, pre-tokenized) with
        ``None``, each added token with its ID. The one walk behind :meth:`pre_tokens` and
        encoding."""
        normalizer = self.normalizer
        pre_tokenizer = self.pre_tokenizer
        for part, added in split_at_added(Piece.of(text), self._plain_matcher, self._added):
            if added is not None:
                yield part, added
                continue
            if normalizer is not None:
                part = normalizer.normalize(part)
            if not part.text:
                continue
            for sub, sub_added in split_at_added(part, self._normalized_matcher, self._added):
                if sub_added is not None:
                    yield sub, sub_added
                    continue
                words = [sub] if pre_tokenizer is None else pre_tokenizer.split([sub])
                for word in words:
                    if word.text:
                        yield word, None

    def pre_tokens(self, text: str) -> list[PreToken]:
        """The words the model sees, in order, with their original spans (added tokens
        included, with their IDs).

        >>> from core.pipeline.models import WordLevelModel
        >>> tok = PipelineTokenizer(model=WordLevelModel({"<unk>": 0}),
        ...                         added_tokens=[AddedToken("<s>", normalized=False)])
        >>> [(p.text, p.added_id) for p in tok.pre_tokens("a<s>b")]
        [('a', None), ('<s>', 1), ('b', None)]
        """
        text = _check_text(text)
        return [PreToken(p.text, p.span, added) for p, added in self._segments(text)]

    def _encode(self, text: str) -> tuple[list[Token], list[Span]]:
        text = _check_text(text)
        tokens: list[Token] = []
        spans: list[Span] = []
        tokenize = self.model.tokenize
        for piece, added in self._segments(text):
            chars = piece.spans
            span = cover(chars, 0, len(chars))
            spans.append(span)
            if added is not None:
                tokens.append((added, *span))
            else:
                tokens.extend((i, *cover(chars, s, e)) for i, s, e in tokenize(piece.text))
        return tokens, spans

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token IDs of ``text``; ``add_special_tokens=True`` adds the template's tokens
        (Llama's ``<s>``, BERT's ``[CLS]`` ... ``[SEP]``), as Hugging Face's ``encode``
        does by default."""
        plan = self.__dict__.get("_encode_plan") or self._new_encode_plan()
        text = _check_text(text)
        if len(text) < BULK_TEXT:
            ids = plan(text)
        else:
            with gc_paused():  # (see BULK_TEXT)
                ids = plan(text)
        return self.template.apply(ids) if add_special_tokens else ids

    def _encode_ids(self, text: str) -> list[int]:
        """IDs only, on plain strings where the stages allow: see core.pipeline.fast_encode."""
        return (self.__dict__.get("_encode_plan") or self._new_encode_plan())(text)

    def _new_encode_plan(self) -> EncodePlan:
        """:func:`~core.pipeline.fast_encode.encode_plan` for these stages, kept until one
        of :data:`_PLAN_INPUTS` is replaced (:meth:`__setattr__`)."""
        plan = self.__dict__["_encode_plan"] = encode_plan(self)
        return plan

    def __setattr__(self, name: str, value: Any) -> None:
        # a new stage or matcher makes a new encode plan (core.pipeline.fast_encode)
        if name in _PLAN_INPUTS:
            self.__dict__.pop("_encode_plan", None)
        super().__setattr__(name, value)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its encode plan (a closure; the copy makes its own)."""
        state = self.__dict__.copy()
        state.pop("_encode_plan", None)
        return state


    def _encode_ids_pieces(self, text: str) -> list[int]:
        """:meth:`_encode_ids` through Pieces (the fallback of core.pipeline.fast_encode)."""
        ids: list[int] = []
        tokenize = self.model.tokenize
        for piece, added in self._segments(text):
            if added is not None:
                ids.append(added)
            else:
                ids.extend([t[0] for t in tokenize(piece.text)])
        return ids

    def encode_spans(
        self, text: str, *, add_special_tokens: bool = False
    ) -> tuple[list[Token], list[Span]]:
        """Each token's ``(id, start, end)`` in characters of the original ``text``
        (template tokens get empty spans at the start / end), and each pre-token's span.

        >>> from core.pipeline.models import WordLevelModel
        >>> tok = PipelineTokenizer(model=WordLevelModel({"<unk>": 0, "hi": 1}),
        ...                         template=Template((9,), (), "<s> $A"))
        >>> tok.encode_spans("hi", add_special_tokens=True)
        ([(9, 0, 0), (1, 0, 2)], [(0, 2)])
        """
        tokens, spans = self._encode(text)
        if add_special_tokens:
            end = len(text)
            tokens = (
                [(i, 0, 0) for i in self.template.prefix]
                + tokens
                + [(i, end, end) for i in self.template.suffix]
            )
        return tokens, spans

    # ------------------------------------------------------------------------------------
    # Decoding
    # ------------------------------------------------------------------------------------

    def decode(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> str:
        """Text of the IDs, as Hugging Face's ``decode`` gives it: every token, added ones
        included, goes through the decoder (with no decoder, tokens are joined with
        spaces). ``skip_special_tokens=True`` drops special added tokens. An ID outside the
        vocab decodes to U+FFFD (Hugging Face skips it; a negative one raises there).

        >>> from core.pipeline.models import WordLevelModel
        >>> PipelineTokenizer(model=WordLevelModel({"<unk>": 0, "hi": 1})).decode([1, 7])
        'hi \\ufffd'
        """
        if isinstance(ids, (str, bytes)):
            raise PlaygroundError(
                f"decode takes a list of token IDs, not {type(ids).__name__}"
            )
        ids = ids if isinstance(ids, list) else list(ids)
        if not set(map(type, ids)) <= {int}:
            ids = [check_id(item, index) for index, item in enumerate(ids)]
        get = self._decode_strings().get
        tokens = [get(i, _UNKNOWN_ID_TOKEN) for i in ids]
        if skip_special_tokens and self._special_contents:
            # subtle: Hugging Face tests the *string*, so a normalized added token whose
            # normalized form differs from its content is not skipped
            specials = self._special_contents
            tokens = [t for t in tokens if t not in specials]
        return decode_tokens(self.decoder, tokens)


# ----------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------


def _check_text(text: object) -> str:
    """``text`` if it is a str; lone surrogates (possible in Python, never in UTF-8, and
    refused by Hugging Face's binding) become U+FFFD one for one, so spans still line up."""
    if not isinstance(text, str):
        hint = (
            " (decode bytes with .decode('utf-8') first)"
            if isinstance(text, bytes)
            else ""
        )
        raise PlaygroundError(f"encode takes a str, not {type(text).__name__}{hint}")
    # (isascii reads a flag: most texts skip the search)
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _model_tokens(model: Model) -> dict[int, str]:
    """ID -> token string, for every ID of the model's vocab.

    >>> from core.pipeline.models import WordLevelModel
    >>> _model_tokens(WordLevelModel({"<unk>": 0, "hi": 1}))
    {0: '<unk>', 1: 'hi'}
    """
    to_token = model.id_to_token
    return {i: t for i in set(model.vocab.values()) if (t := to_token(i)) is not None}


def _describe(pre_tokenizer: Any) -> str:
    """A short description of a pre-tokenizer for display."""
    if pre_tokenizer is None:
        return "none (each piece between added tokens is one word)"
    described = getattr(pre_tokenizer, "description", None)
    if isinstance(described, str) and described:
        return described
    return type(pre_tokenizer).__name__
