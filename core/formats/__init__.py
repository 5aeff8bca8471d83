"""Tokenizer file formats: load (safely) and save every format the playground knows.

- CS336 pickles ``vocab.pkl`` + ``merges.pkl`` (:mod:`core.formats.pickles`, loaded through
  the restricted unpickler in :mod:`core.formats.safe_pickle`)
- GPT-2 ``encoder.json`` + ``vocab.bpe`` (:mod:`core.formats.gpt2_files`)
- tiktoken ``.tiktoken`` rank files (:mod:`core.formats.tiktoken_file`)
- Hugging Face ``tokenizer.json`` (:mod:`core.formats.hf_json`)

:func:`load_tokenizer_files` guesses the format from uploaded files; :func:`export_all` writes
every format (file name -> bytes) for download buttons.
"""

from core.formats.detect import (
    ACCEPTED as ACCEPTED,
    FileSet as FileSet,
    export_all as export_all,
    identify_files as identify_files,
    load_tokenizer_files as load_tokenizer_files,
)
from core.formats.gpt2_files import (
    dumps_encoder_json as dumps_encoder_json,
    dumps_gpt2 as dumps_gpt2,
    dumps_vocab_bpe as dumps_vocab_bpe,
    infer_special_tokens as infer_special_tokens,
    loads_encoder_json as loads_encoder_json,
    loads_gpt2 as loads_gpt2,
    loads_vocab_bpe as loads_vocab_bpe,
    tokenizer_from_gpt2_files as tokenizer_from_gpt2_files,
    tokenizer_to_gpt2_files as tokenizer_to_gpt2_files,
)
from core.formats.hf_json import (
    dumps_hf_json as dumps_hf_json,
    hf_regex as hf_regex,
    loads_hf_json as loads_hf_json,
    tokenizer_from_hf_json as tokenizer_from_hf_json,
    tokenizer_to_hf_json as tokenizer_to_hf_json,
)
from core.formats.pickles import (
    dumps_merges as dumps_merges,
    dumps_vocab as dumps_vocab,
    load_pickles as load_pickles,
    loads_merges as loads_merges,
    loads_pickles as loads_pickles,
    loads_vocab as loads_vocab,
    save_pickles as save_pickles,
    tokenizer_from_pickles as tokenizer_from_pickles,
    tokenizer_to_pickles as tokenizer_to_pickles,
)
from core.formats.safe_pickle import (
    MAX_PICKLE_BYTES as MAX_PICKLE_BYTES,
    RestrictedUnpickler as RestrictedUnpickler,
    safe_loads as safe_loads,
    scan_pickle as scan_pickle,
    validate_merges as validate_merges,
    validate_merges_in_vocab as validate_merges_in_vocab,
    validate_vocab as validate_vocab,
)
from core.formats.tiktoken_file import (
    dump_tiktoken_ranks as dump_tiktoken_ranks,
    load_tiktoken_ranks as load_tiktoken_ranks,
    ranks_to_merges as ranks_to_merges,
    tokenizer_from_tiktoken as tokenizer_from_tiktoken,
    tokenizer_to_tiktoken as tokenizer_to_tiktoken,
)
