"""Optional compiled twins of core's hottest loops, in C against CPython's API.

core is pure Python (plus ``regex``) so that it runs anywhere, Pyodide included. A few loops
are the whole cost of what they do, and this package runs them in C when it was built
(``pip install`` builds it when a C compiler is present, and goes on without it otherwise):

- ``bpe``: the BPE merge loop (:func:`core.engine.bpe.merge`), a byte-level pre-token's BPE
  (:mod:`core.engine.pretoken_bpe`), the pre-token cache's loop (:mod:`core.engine.text_encoder`) and a
  SentencePiece BPE model's words (:mod:`core.pipeline.sentencepiece.native_words`);
- ``train``: training's merge loop (:mod:`core.train.merge`);
- ``count``: training's pre-token counts, GPT-2's ASCII pre-tokens cut in C
  (:mod:`core.train.count_table`);
- ``unigram``: Unigram's Viterbi pass (:mod:`core.pipeline.models.unigram`);
- ``spm``: reading a SentencePiece model's pieces and a GGUF vocab's strings
  (:mod:`core.pipeline.sentencepiece.proto`, :mod:`core.formats.gguf`);
- ``tables``: loading a merge list, its merges split into IDs and its pairs indexed
  (:mod:`core.engine.vocab_index`);
- ``normalize``: SentencePiece's and Hugging Face's "precompiled" normalization
  (:mod:`core.pipeline.sentencepiece.normalizer`, :mod:`core.pipeline.precompiled`).
- ``decode``: a byte-level tokenizer's decode, the tokens' bytes joined and read as UTF-8
  (:func:`core.native.join_text`);
- ``pretok``: the built-in patterns' pre-tokens (GPT-2, cl100k, Llama 3, o200k, Tekken), cut
  as ``regex``'s findall cuts them, with ``regex``'s own character classes
  (:mod:`core.engine.pretoken_split`).

core never imports this package directly: :mod:`core.native` does, and says what was found.
Each function here has a pure-Python twin in core that gives the same result on every input;
tests/test_native_*.py checks each pair on arbitrary input, and the rest of the suite runs
the pure twins too (``TOKPLAY_NATIVE=0``).
"""
