"""One door for every tokenizer: :class:`TokenizerInterface` and the :class:`Capabilities`
it declares.

Every tokenizer the playground holds satisfies :class:`TokenizerInterface`: the byte-level
:class:`core.engine.tokenizer.Tokenizer` (merge list or ranks), the Hugging Face / SentencePiece
:class:`core.pipeline.tokenizer.PipelineTokenizer` and the word- and char-level baselines of
:mod:`core.explain.baselines`. A page that holds "a tokenizer" needs nothing else.

What only some of them can do is *declared*, as sentencepiece's ``ModelInterface`` declares
``IsNBestEncodeAvailable()``: a caller asks ``tok.capabilities`` instead of checking the
tokenizer's type or probing for attributes. ``capabilities.details`` promises the members of
:class:`DetailedTokenizer` (chips, pre-tokens, "why this split", merge trees, the vocabulary
as bytes).

>>> from core.explain.baselines import WordTokenizer
>>> tok = WordTokenizer.train("the cat sat")
>>> isinstance(tok, TokenizerInterface), tok.capabilities.details
(True, False)
>>> tok.decode(tok.encode("the dog")), tok.id_to_piece(tok.unk_id)
('the <|unk|>', '<|unk|>')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from core.chat.template import ChatTemplate
    from core.engine.details import DecodeDetails, EncodingDetails, MergeNode, MergeStep
    from core.engine.template import Template
    from core.pipeline.models.unigram import SplitPaths

__all__ = [
    "Capabilities", "ChatTokenizer", "DetailedTokenizer", "ScoredTokenizer", "TokenizerInterface",
]


@dataclass(frozen=True)
class Capabilities:
    """What a tokenizer can do beyond encoding and decoding. Each flag is a promise the
    tokenizer makes about itself; tests check every promise against the object.

    ``details``: it is a :class:`DetailedTokenizer`: per-token spans and bytes
    (``encode_details``, ``decode_details``), merge traces and trees, ``vocab`` as bytes,
    ``merges``, ``special_tokens`` and ``pattern``.
    ``byte_level``: byte-level BPE: every text encodes from the 256 byte tokens, with no
    unknown token, and decodes back exactly; :meth:`TokenizerInterface.id_to_piece` spells
    its tokens in GPT-2's byte-to-unicode form.
    ``replay``: :class:`core.explain.replay.TextReplay` can step through its merges.
    ``export``: :func:`core.formats.export_all` writes it in every byte-level format.
    ``save``: the library (vocab + merge list + specials + pattern) holds it exactly.
    ``scores``: it is a :class:`ScoredTokenizer` (a Unigram model): every piece has a score,
    and "why this split" is the best path against the next best, not a list of merges.
    ``chat``: it is a :class:`ChatTokenizer` with a chat template (its own, from
    ``tokenizer_config.json``, ``chat_template.jinja`` or GGUF, or a built-in format for
    OpenAI's encodings): ``apply_chat_template`` renders a conversation (:mod:`core.chat`).
    ``merges``: (with ``details``) a BPE model: its tokens are made by merges, which
    ``merge_trace`` and ``merge_tree`` show; byte-level BPE, and BPE over characters
    (SentencePiece, Hugging Face), whose ``merges`` list may be empty when the pieces'
    scores order the merges. Without it (WordPiece, WordLevel, Unigram) a token is a whole
    entry of the vocabulary: no trace, and every merge tree is one node.

    >>> Capabilities(details=True)
    Capabilities(details=True, byte_level=False, replay=False, export=False, save=False, \
scores=False, chat=False, merges=False)
    """

    details: bool = False
    byte_level: bool = False
    replay: bool = False
    export: bool = False
    save: bool = False
    scores: bool = False
    chat: bool = False
    merges: bool = False


@runtime_checkable
class TokenizerInterface(Protocol):
    """What every tokenizer of the playground offers.

    ``name``: how its source names it (may be ``""``); ``kind``: what it is, in a few words
    (``"byte-level BPE"``, ``"WordPiece"``, ``"word-level baseline"``); ``n_vocab``: one
    more than its largest ID; ``template``: what ``add_special_tokens=True`` adds (empty for
    most); ``unk_id``: the ID that stands for what it cannot encode, which chips and
    coverage counts mark (``None`` when it has none, or does not say). All are read-only
    (properties here, so that a plain attribute and a property both satisfy them).
    """

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def capabilities(self) -> Capabilities: ...
    @property
    def n_vocab(self) -> int: ...
    @property
    def template(self) -> Template: ...
    @property
    def unk_id(self) -> int | None: ...

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token IDs of ``text``; ``add_special_tokens=True`` wraps them in ``template``."""
        ...

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the IDs (an ID outside the vocabulary shows as U+FFFD)."""
        ...

    def id_to_piece(self, token_id: int) -> str:
        """The token as the tokenizer's own files write it (``"Ġthe"``, ``"▁the"``,
        ``"##ing"``, a word), as sentencepiece's ``IdToPiece``; ``""`` for an ID outside
        the vocabulary."""
        ...

    def fingerprint(self) -> str:
        """A content hash of everything that changes its output (16 hex digits): the cache
        key for whatever is computed from it. Computed once; tokenizers do not change once
        built."""
        ...


@runtime_checkable
class DetailedTokenizer(TokenizerInterface, Protocol):
    """A tokenizer whose ``capabilities.details`` is set: the pages' chips, pre-tokens,
    "why this split", merge trees and vocabulary table come from these.

    ``vocab``: ID -> the bytes the token adds to a decoded text; ``merges``: the merge list
    in rank order, spelled as ``vocab`` spells tokens (``[]`` when the model has none);
    ``pattern``: the pre-tokenizer, as a regex or a description. All read-only.
    """

    @property
    def vocab(self) -> Mapping[int, bytes]: ...
    @property
    def merges(self) -> Sequence[tuple[bytes, bytes]]: ...
    @property
    def special_tokens(self) -> list[str]: ...
    @property
    def pattern(self) -> str: ...

    def encode_details(
        self, text: str, *, add_special_tokens: bool = False
    ) -> EncodingDetails: ...

    def decode_details(self, ids: Iterable[int]) -> DecodeDetails: ...

    def merge_trace(self, pretoken: str) -> list[MergeStep]: ...

    def merge_tree(self, token_id: int) -> MergeNode: ...


@runtime_checkable
class ScoredTokenizer(DetailedTokenizer, Protocol):
    """A tokenizer whose ``capabilities.scores`` is set (Unigram: T5, ALBERT, XLM-R): the
    Vocabulary page shows each piece's score, "why this split" the best path against the
    next best.

    ``score(token_id)``: the piece's score (a log-probability), ``None`` for an ID without
    one (an added token); ``split_paths(pretoken)``: for each word the model sees in
    ``pretoken`` (normalized, pre-tokenized), its best path and runner-up.
    """

    def score(self, token_id: int) -> float | None: ...

    def split_paths(self, pretoken: str) -> list[SplitPaths]: ...


@runtime_checkable
class ChatTokenizer(DetailedTokenizer, Protocol):
    """A tokenizer whose ``capabilities.chat`` is set: a conversation through its chat
    template, string for string and ID for ID as ``transformers``' ``apply_chat_template``.

    ``chat_template``: its own template (``None`` when it has none: a built-in format may
    still apply, :func:`core.chat.chat_template_of`). ``apply_chat_template``: the rendered
    text (``tokenize=False``) or its IDs; ``**kwargs`` reach the template.
    """

    @property
    def chat_template(self) -> ChatTemplate | None: ...

    def apply_chat_template(
        self, messages: Sequence[Mapping[str, object]], *, add_generation_prompt: bool = False,
        tokenize: bool = True, tools: Sequence[Mapping[str, object]] | None = None,
        **kwargs: object,
    ) -> str | list[int]: ...
