"""Tokenizer Playground core: byte-level BPE training, encoding, decoding and file formats.

Pure Python (plus ``regex``, or :mod:`core.engine.regex_compat`'s stand-in on ``re`` where it is
missing): no UI imports, no printing. Progress leaves through callbacks and generators, so
the same code runs under Streamlit, a CLI or Pyodide.

The CS336 data contract is used throughout::

    vocab: dict[int, bytes]                 # token ID -> token bytes
    merges: list[tuple[bytes, bytes]]       # in creation order (rank = index)

This module exports what a user of the library needs; everything else stays importable from
its own module (``core.engine.details``, ``core.explain.compare``, ``core.engine.vocab_table``, ``core.formats.*``).
"""

# training
from core.train import BPETrainer as BPETrainer
from core.train import MergeEvent as MergeEvent
from core.train import train_bpe as train_bpe

# one door for every tokenizer: what each offers, and what only some can do (capabilities)
from core.interface import Capabilities as Capabilities
from core.interface import DetailedTokenizer as DetailedTokenizer
from core.interface import TokenizerInterface as TokenizerInterface

# tokenizing
from core.engine.details import parse_ids as parse_ids
from core.formats.presets import PRESETS as PRESETS
from core.formats.presets import load_preset as load_preset
from core.engine.tokenizer import Tokenizer as Tokenizer
from core.pipeline.tokenizer import PipelineTokenizer as PipelineTokenizer
from core.engine.template import Template as Template

# replay: a tokenizer after its first k merges
from core.explain.replay import TextReplay as TextReplay
from core.explain.replay import encode_with_first_merges as encode_with_first_merges

# pre-tokenization
from core.engine.pretokenize import PATTERNS as PATTERNS
from core.engine.pretokenize import pretokenize as pretokenize
from core.engine.pretokenize import split_on_specials as split_on_specials

# files: every format in, every format out, CS336 pickles loaded safely
from core.formats import export_all as export_all
from core.formats import load_tokenizer_files as load_tokenizer_files
from core.formats import loads_merges as loads_merges
from core.formats import loads_vocab as loads_vocab

# models by name: the Hugging Face Hub and its local cache (huggingface_hub, imported on use)
from core.services.hub import cached_models as cached_models
from core.services.hub import from_pretrained as from_pretrained

# data, baselines and the saved-tokenizer store
from core.explain.baselines import CharBPETokenizer as CharBPETokenizer
from core.explain.baselines import WordTokenizer as WordTokenizer
from core.train.builtin_corpus import builtin_corpus_text as builtin_corpus_text
from core.services.library import TokenizerLibrary as TokenizerLibrary

# errors: every error core raises is a PlaygroundError whose message says what to do
from core.errors import CorpusError as CorpusError
from core.errors import FormatError as FormatError
from core.errors import PatternNeededError as PatternNeededError
from core.errors import PlaygroundError as PlaygroundError
from core.errors import TrainingConfigError as TrainingConfigError
from core.errors import UnsafePickleError as UnsafePickleError
from core.errors import LibraryError as LibraryError
from core.errors import HubAccessError as HubAccessError
from core.errors import HubError as HubError
from core.errors import HubOfflineError as HubOfflineError
