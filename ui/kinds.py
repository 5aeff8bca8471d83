"""What the pages say about a tokenizer's kind of model, in one table (no Streamlit import).

A caption that explains a vocabulary or a split is only true for one kind of model: byte-level
BPE starts from 256 bytes, SentencePiece BPE from characters, a Unigram model learns no
merges but scores, WordPiece cuts a word into the longest pieces it knows. :func:`kind_of`
picks the row from the capabilities the tokenizer declares (``core.interface.Capabilities``),
never from its type.

>>> from core.interface import Capabilities
>>> kind_of(Capabilities(details=True, byte_level=True, merges=True)).leaf
'byte'
>>> kind_of(Capabilities(details=True)).name
'WordPiece'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.interface import Capabilities

__all__ = ["BYTE_BPE", "CHAR_BPE", "KINDS", "Kind", "UNIGRAM", "WORDPIECE", "kind_of",
           "trace_caption"]


@dataclass(frozen=True)
class Kind:
    """The texts for one kind of model.

    ``vocabulary``: the Vocabulary page's caption; ``pretokens``: Tokenize's pre-tokens
    caption (``{n}``: how many pieces); ``first``: what a merge trace starts from; ``leaf``:
    a merge-tree node no merge made; ``no_trace``: Tokenize's "Why this split" for a model
    without merges ("" when it has a merge trace, or a view of its own).
    """

    name: str
    vocabulary: str
    pretokens: str
    first: str = "bytes"
    leaf: str = "byte"
    no_trace: str = ""


BYTE_BPE = Kind(
    name="byte-level BPE",
    vocabulary="Every token the tokenizer knows: the 256 single bytes, one token per merge "
               "(numbered in the order it was learned) and the special tokens. Click a row to "
               "see its merge tree.",
    pretokens="The pre-tokenizer cuts the text into {n} pieces before any merge; BPE never "
              "merges across these cuts (nor across special tokens).",
)
CHAR_BPE = Kind(
    name="BPE over characters",
    vocabulary="Every token the tokenizer knows: single characters (with byte fallback, also "
               "the 256 byte pieces such as `<0x0A>` for the characters it lacks), the tokens "
               "its merges make and the special tokens. Click a row to see its merge tree.",
    pretokens="The text in {n} pieces that BPE merges one at a time: the pre-tokenizer's "
              "cuts (a SentencePiece model has none: it works on the whole normalized text, "
              "shown cut where no token crosses). No merge crosses them, nor a special token.",
    first="characters",
    leaf="base piece",
)
UNIGRAM = Kind(
    name="Unigram",
    vocabulary="Every piece the model knows, each with its score (a log-probability), and the "
               "special tokens. A Unigram model learns no merges. Click a row to see its "
               "score.",
    pretokens="The text in {n} pieces that the model cuts one at a time: the pre-tokenizer's "
              "cuts (a SentencePiece model has none: the whole normalized text is one "
              "piece). There are no merges: each piece is cut where its tokens' scores add "
              "up highest.",
    leaf="piece",
)
WORDPIECE = Kind(
    name="WordPiece",
    vocabulary="Every token the tokenizer knows: whole words, pieces of words (`##` marks a "
               "piece that continues a word) and the special tokens. A WordPiece model "
               "learns no merges: a word is cut into the longest pieces this list holds. "
               "Click a row to see it.",
    pretokens="The pre-tokenizer cuts the text into {n} words; each is then cut into the "
              "longest pieces the vocabulary holds, left to right. No token crosses these "
              "cuts.",
    leaf="piece",
    no_trace="A WordPiece model learns no merges, so there are none to trace: each word is "
             "cut into the longest piece the vocabulary holds, then the longest piece after "
             "it (`##` marks a piece that continues a word), and a word it cannot cut becomes "
             "the unknown token. The chips above show the pieces.",
)
#: Every kind, in the order :func:`kind_of` tells them apart.
KINDS = (UNIGRAM, BYTE_BPE, CHAR_BPE, WORDPIECE)


def kind_of(capabilities: Capabilities) -> Kind:
    """The row for a tokenizer that declares ``capabilities`` (with ``details``): scores
    mean Unigram; merges mean BPE, over bytes or characters; neither means whole pieces
    (WordPiece, and WordLevel's whole words).

    >>> from core.interface import Capabilities
    >>> kind_of(Capabilities(details=True, merges=True)).first
    'characters'
    >>> kind_of(Capabilities(details=True, scores=True)).name
    'Unigram'
    """
    if capabilities.scores:
        return UNIGRAM
    if capabilities.merges:
        return BYTE_BPE if capabilities.byte_level else CHAR_BPE
    return WORDPIECE


def trace_caption(kind: Kind, word: str, n_steps: int, *, listed: bool) -> str:
    """Tokenize's caption over a merge trace of ``word`` (Markdown, already escaped) in
    ``n_steps`` merges; ``listed``: the model has a merge list (``tok.merges``), else its
    merges follow the pieces' scores (SentencePiece BPE), and a step's number is the merged
    piece's place in the vocabulary.

    >>> trace_caption(CHAR_BPE, "hi", 1, listed=False)  # doctest: +NORMALIZE_WHITESPACE
    'Start from the characters of “hi” and merge, one step at a time, the adjacent pair that makes
    the best-scored piece (SentencePiece keeps no merge list; #N: the merged piece is the N-th of
    the vocabulary): 1 merge(s) apply.'
    """
    if listed:
        how = ("apply every merge the tokenizer knows, in the order it learned them (#1 is the "
               "first)")
    else:
        how = ("merge, one step at a time, the adjacent pair that makes the best-scored piece "
               "(SentencePiece keeps no merge list; #N: the merged piece is the N-th of the "
               "vocabulary)")
    return f"Start from the {kind.first} of “{word}” and {how}: {n_steps} merge(s) apply."
