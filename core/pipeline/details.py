"""What the pages draw for a :class:`~core.pipeline.tokenizer.PipelineTokenizer`: the same
data classes as :mod:`core.engine.details`, so chips, decode views and traces work for every kind.

Differences from byte-level BPE, and how they are drawn:

- a token's ``token`` bytes are what it adds to decoded text (``▁the`` → ``b" the"``,
  ``<0xE4>`` → ``b"\\xe4"``, ``##ing`` → ``b"ing"``) and ``piece`` is how the file spells it;
- a character the vocab lacks becomes several byte-fallback tokens (SentencePiece,
  Llama 2): each holds part of a UTF-8 character, so they are ``partial`` and share a group,
  exactly like byte-level BPE's pieces of a character;
- spans come from the pipeline's alignment (:class:`~core.pipeline.piece.Piece`), so a token
  made from normalized text (``ﬁ`` → ``fi``, an upper-case letter lower-cased) sits under
  the characters the user typed;
- the merge trace runs the model's own BPE on the word (WordPiece has none).

>>> from core.pipeline.models import WordLevelModel
>>> from core.pipeline.tokenizer import PipelineTokenizer
>>> tok = PipelineTokenizer(model=WordLevelModel({"<unk>": 0, "hi": 1}))
>>> [(t.id, t.start, t.end, t.piece) for t in encode_details(tok, "hi").tokens]
[(1, 0, 2, 'hi')]
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from core.engine.basics import check_id, utf8
from core.engine.details import (
    DecodeDetails,
    DecodedPiece,
    EncodingDetails,
    MergeNode,
    MergeStep,
    TokenSpan,
    decode_replacements,
)
from core.errors import PlaygroundError
from core.pipeline.models.base import Model, is_merge_model, is_scored_model

if TYPE_CHECKING:
    from core.engine.template import Template
    from core.pipeline.models.unigram import SplitPaths

__all__ = ["PipelineParts", "decode_details", "encode_details", "merge_trace", "merge_tree",
           "split_paths"]


class _Word(Protocol):
    """What merge_trace reads of a word the model sees (a ``PreToken``)."""

    @property
    def text(self) -> str: ...
    @property
    def added_id(self) -> int | None: ...


class PipelineParts(Protocol):
    """What these functions read from a pipeline tokenizer;
    :class:`core.pipeline.tokenizer.PipelineTokenizer` has it all. A protocol, not that class:
    core.pipeline.tokenizer imports this module, so naming the class here (even under
    ``TYPE_CHECKING``) would close an import circle."""

    @property
    def vocab(self) -> Mapping[int, bytes]: ...
    @property
    def pieces(self) -> Mapping[int, str]: ...
    @property
    def special_token_ids(self) -> Mapping[str, int]: ...
    @property
    def template(self) -> Template: ...
    @property
    def n_vocab(self) -> int: ...
    @property
    def model(self) -> Model: ...
    def encode_spans(
        self, text: str, *, add_special_tokens: bool = False
    ) -> tuple[Sequence[tuple[int, int, int]], Sequence[tuple[int, int]]]: ...
    def decode(self, ids: Iterable[int]) -> str: ...
    def pre_tokens(self, text: str) -> Sequence[_Word]: ...
    def id_to_token(self, token_id: int) -> str | None: ...


def _whole_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def encode_details(
    tokenizer: PipelineParts, text: str, *, add_special_tokens: bool = False
) -> EncodingDetails:
    """Everything the Tokenize page shows about ``tokenizer.encode(text)``: the IDs are
    exactly ``tokenizer.encode(text, add_special_tokens=...)``."""
    if not isinstance(text, str):
        raise PlaygroundError(f"encode_details takes a str, not {type(text).__name__}")
    spans, pretokens = tokenizer.encode_spans(
        text, add_special_tokens=add_special_tokens
    )
    vocab = tokenizer.vocab
    pieces = tokenizer.pieces
    specials = set(tokenizer.special_token_ids.values())
    template = set(tokenizer.template.prefix) | set(tokenizer.template.suffix)
    starts = [s for s, _ in pretokens]
    tokens: list[TokenSpan] = []
    group = -1
    last: tuple[int, int] | None = None
    for index, (tid, start, end) in enumerate(spans):
        token = vocab.get(tid, b"")
        special = tid in specials or (tid in template and start == end)
        partial = not special and not _whole_utf8(token)
        # tokens that share original characters together make them (byte fallback, NFKC)
        if special or last is None or start >= last[1] or start == end:
            group += 1
        last = (start, end)
        k = bisect_right(starts, start) - 1 if start < end or not special else -1
        tokens.append(
            TokenSpan(
                index=index,
                id=tid,
                token=token,
                start=start,
                end=end,
                # a control token (Llama's <s>) decodes to nothing: show its name
                text=token.decode("utf-8", "replace")
                or (pieces.get(tid, "") if special else ""),
                is_special=special,
                partial=partial,
                group=group,
                pretoken=k,
                piece=pieces.get(tid, ""),
            )
        )
    return EncodingDetails(
        text=text,
        tokens=tokens,
        pretokens=list(pretokens),
        n_chars=len(text),
        n_bytes=len(utf8(text)),
        n_tokens=len(tokens),
    )


def decode_details(tokenizer: PipelineParts, ids: Iterable[int]) -> DecodeDetails:
    """Per-ID pieces and the origin of every U+FFFD in ``tokenizer.decode(ids)``.

    The text is the model's own decode (Llama drops the leading space, WordPiece joins words
    with spaces). The U+FFFDs are found in the stream of the tokens' bytes, as for byte-level
    BPE, and matched in order to those in the decoded text.
    """
    if isinstance(ids, (str, bytes)):
        raise PlaygroundError(
            "decode_details takes a list of token IDs; use parse_ids() for text"
        )
    vocab = tokenizer.vocab
    pieces: list[DecodedPiece] = []
    stream: list[bytes] = []
    checked: list[int] = []
    for index, item in enumerate(ids):
        tid = check_id(item, index)
        checked.append(tid)
        token = vocab.get(tid)
        if token is None:
            pieces.append(DecodedPiece(index, tid, None, "", "\ufffd", True))
            stream.append(b"\xff")
        else:
            text = token.decode("utf-8", "replace")
            pieces.append(DecodedPiece(index, tid, token, token.hex(" "), text, False))
            stream.append(token)
    text = tokenizer.decode(checked)
    where = [i for i, ch in enumerate(text) if ch == "\ufffd"]
    # The k-th U+FFFD of the byte stream is the k-th one of the decoded text. Python (and
    # Hugging Face's ByteLevel) make one U+FFFD per maximal bad subpart, SentencePiece and
    # the ByteFallback decoder one per bad byte: use whichever count the text shows.
    found = decode_replacements(stream)
    if len(found) != len(where):
        per_byte = decode_replacements(stream, per_byte=True)
        if len(per_byte) == len(where):
            found = per_byte
    replacements = [(pos, owners) for pos, (_, owners) in zip(where, found)]
    return DecodeDetails(text=text, pieces=pieces, replacements=replacements)


def merge_trace(tokenizer: PipelineParts, pretoken: str) -> list[MergeStep]:
    """The merges the model's BPE makes in ``pretoken`` (text as the user typed it: it goes
    through the normalizer and pre-tokenizer first, and every word it gives is traced in
    turn). ``[]`` for WordPiece and for an added token.

    ``pair``/``merged``/``before``/``after`` spell tokens as the file does (``▁the``), UTF-8.
    """
    if not isinstance(pretoken, str):
        raise PlaygroundError(f"merge_trace takes a str, not {type(pretoken).__name__}")
    model = tokenizer.model
    if not is_merge_model(model):
        return []
    steps: list[MergeStep] = []
    done: list[bytes] = []  # words already traced, shown before the current one
    for word in tokenizer.pre_tokens(pretoken):
        if word.added_id is not None:
            done.append(word.text.encode("utf-8"))
            continue
        final = [
            utf8(tokenizer.id_to_token(i) or "")
            for i, _, _ in model.tokenize(word.text)
        ]
        for step in model.trace(word.text):
            steps.append(
                MergeStep(
                    rank=step.rank,
                    pair=(utf8(step.left), utf8(step.right)),
                    merged=utf8(step.merged),
                    before=done + [utf8(t) for t in step.before],
                    after=done + [utf8(t) for t in step.after],
                )
            )
        done = done + final
    return steps


def split_paths(tokenizer: PipelineParts, pretoken: str) -> list[SplitPaths]:
    """Unigram's "why this split" for ``pretoken`` (text as the user typed it): for each
    word the model sees (normalized, pre-tokenized; added tokens skipped), the best path
    and the next best (:meth:`core.pipeline.models.unigram.UnigramModel.split_paths`). ``[]`` for
    a model without scores."""
    if not isinstance(pretoken, str):
        raise PlaygroundError(f"split_paths takes a str, not {type(pretoken).__name__}")
    model = tokenizer.model
    if not is_scored_model(model):
        return []
    return [model.split_paths(w.text) for w in tokenizer.pre_tokens(pretoken) if w.added_id is None]


def merge_tree(tokenizer: PipelineParts, token_id: int) -> MergeNode:
    """How token ``token_id`` is built by the model's merges, down to tokens no merge
    makes (characters, or byte-fallback pieces); a leaf for WordPiece and added tokens.
    Tokens are spelled as the file does (``▁the``), UTF-8."""
    if isinstance(token_id, bool) or not isinstance(token_id, int):
        raise PlaygroundError(f"merge_tree takes an integer token ID, not {token_id!r}")
    pieces = tokenizer.pieces
    if token_id not in pieces:
        raise PlaygroundError(
            f"ID {token_id} is not in this vocabulary (IDs run from 0 to {tokenizer.n_vocab - 1})"
        )
    made: dict[str, tuple[int, str, str]] = {}
    model = tokenizer.model
    trace = None
    if is_merge_model(model):  # (else a leaf: every token is a whole vocab entry)
        trace = model.trace
        prefix = model.continuing_subword_prefix or ""
        for rank, (a, b) in enumerate(model.merges):
            joined = a + (b[len(prefix) :] if prefix and b.startswith(prefix) else b)
            made.setdefault(joined, (rank, a, b))
    by_token = {t: i for i, t in pieces.items()}
    specials = set(tokenizer.special_token_ids.values())

    def split(piece: str) -> tuple[int, str, str] | None:
        found = made.get(piece)
        if found is None and not made and trace is not None:
            # no merge list (SentencePiece: scores): the last merge BPE makes on the piece's
            # own text, when BPE rebuilds the piece, is the pair that makes it
            steps = trace(piece)
            if steps and steps[-1].after == (piece,):
                return steps[-1].rank, steps[-1].left, steps[-1].right
        return found

    def build(tid: int, depth: int) -> MergeNode:
        piece = pieces.get(tid, "")
        found = None if tid in specials or depth > 64 else split(piece)
        left = right = None
        if found is not None:
            left_id, right_id = by_token.get(found[1]), by_token.get(found[2])
            if left_id is not None and right_id is not None:
                left, right = build(left_id, depth + 1), build(right_id, depth + 1)
        rank = found[0] if found is not None and left is not None else None
        return MergeNode(tid, utf8(piece), rank, left, right, tid in specials)

    return build(token_id, 0)
