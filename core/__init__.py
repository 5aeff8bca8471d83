"""Tokenizer Playground core: byte-level BPE training, encoding, decoding and file formats.

Pure Python (plus ``regex``): no UI imports, no printing. Progress leaves through
callbacks and generators, so the same code runs under Streamlit, a CLI or Pyodide.

The CS336 data contract is used throughout::

    vocab: dict[int, bytes]                 # token ID -> token bytes
    merges: list[tuple[bytes, bytes]]       # in creation order (rank = index)
"""

from core.bytes_unicode import from_gpt2_str as from_gpt2_str, to_gpt2_str as to_gpt2_str
from core.errors import (
    CorpusError as CorpusError,
    FormatError as FormatError,
    PlaygroundError as PlaygroundError,
    TrainingConfigError as TrainingConfigError,
    UnsafePickleError as UnsafePickleError,
)
from core.pretokenize import (
    CL100K_PATTERN as CL100K_PATTERN,
    GPT2_PATTERN as GPT2_PATTERN,
    O200K_PATTERN as O200K_PATTERN,
    PATTERNS as PATTERNS,
    pretokenize as pretokenize,
    split_on_specials as split_on_specials,
)
