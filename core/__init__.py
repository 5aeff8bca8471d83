"""Tokenizer Playground core: byte-level BPE training, encoding, decoding and file formats.

Pure Python (plus ``regex``): no UI imports, no printing. Progress leaves through
callbacks and generators, so the same code runs under Streamlit, a CLI or Pyodide.

The CS336 data contract is used throughout::

    vocab: dict[int, bytes]                 # token ID -> token bytes
    merges: list[tuple[bytes, bytes]]       # in creation order (rank = index)
"""

from core.baselines import (
    CharBPETokenizer as CharBPETokenizer,
    CoverageStats as CoverageStats,
    WordTokenizer as WordTokenizer,
    coverage_stats as coverage_stats,
)
from core.builtin_corpus import (
    BUILTIN_CORPUS_NAME as BUILTIN_CORPUS_NAME,
    builtin_corpus_documents as builtin_corpus_documents,
    builtin_corpus_text as builtin_corpus_text,
)
from core.bytes_unicode import from_gpt2_str as from_gpt2_str, to_gpt2_str as to_gpt2_str
from core.compare import (
    Region as Region,
    boundaries as boundaries,
    differing_regions as differing_regions,
    first_difference as first_difference,
    tokenization_stats as tokenization_stats,
)
from core.details import (
    DecodedPiece as DecodedPiece,
    DecodeDetails as DecodeDetails,
    EncodingDetails as EncodingDetails,
    IdProblem as IdProblem,
    MergeNode as MergeNode,
    MergeStep as MergeStep,
    TokenSpan as TokenSpan,
    parse_ids as parse_ids,
)
from core.errors import (
    CorpusError as CorpusError,
    FormatError as FormatError,
    PlaygroundError as PlaygroundError,
    TrainingConfigError as TrainingConfigError,
    UnsafePickleError as UnsafePickleError,
)
from core.formats import (
    dumps_merges as dumps_merges,
    dumps_vocab as dumps_vocab,
    export_all as export_all,
    load_tokenizer_files as load_tokenizer_files,
    loads_merges as loads_merges,
    loads_vocab as loads_vocab,
)
from core.library import (
    Entry as Entry,
    InvalidIdError as InvalidIdError,
    LibraryError as LibraryError,
    TokenizerLibrary as TokenizerLibrary,
    UnknownIdError as UnknownIdError,
)
from core.presets import PRESETS as PRESETS, load_preset as load_preset
from core.pretokenize import (
    CL100K_PATTERN as CL100K_PATTERN,
    GPT2_PATTERN as GPT2_PATTERN,
    O200K_PATTERN as O200K_PATTERN,
    PATTERNS as PATTERNS,
    pretokenize as pretokenize,
    split_on_specials as split_on_specials,
)
from core.tokenizer import Tokenizer as Tokenizer
from core.vocab_table import (
    VocabRow as VocabRow,
    length_counts as length_counts,
    search_rows as search_rows,
    vocab_rows as vocab_rows,
)
from core.train import (
    BPETrainer as BPETrainer,
    MergeEvent as MergeEvent,
    train_bpe as train_bpe,
)
