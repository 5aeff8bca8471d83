"""Tokenizers that are not plain byte-level BPE: the Hugging Face pipeline, in pure Python.

A Hugging Face ``tokenizer.json`` (and a SentencePiece ``.model``, which we read into the
same shape) describes a pipeline of stages, each in its own module here::

    text ─► normalizer ─► pre-tokenizer ─► model ─► post-processor ─► IDs
                                                    (BOS/EOS template)
    IDs ─► tokens ─► decoder ─► text

- :mod:`core.pipeline.piece`: :class:`Piece`, a string that remembers, for each of its
  characters, which characters of the user's original text it came from. Normalizers and
  pre-tokenizers map pieces to pieces, so every token can be drawn under the characters
  it covers even after NFKC, lower-casing or ``▁`` replacement.
- :mod:`core.pipeline.normalizers`, :mod:`core.pipeline.pre_tokenizers`,
  :mod:`core.pipeline.models` (BPE over strings, WordPiece), :mod:`core.pipeline.post_processors`,
  :mod:`core.pipeline.decoders`: one class per Hugging Face component, each with a
  ``from_json`` that names the component it cannot read (the checked fields in
  :mod:`core.pipeline.json_fields`).
- :mod:`core.pipeline.pattern`: Hugging Face's ``{"String"}`` / ``{"Regex"}`` patterns,
  matched as Oniguruma does; :mod:`core.pipeline.unicode_tables`: Unicode as the crates
  behind ``tokenizers`` see it (character tests, their tables, NFC/NFD in segments).
- :mod:`core.pipeline.tokenizer`: :class:`PipelineTokenizer`, the stages put together.
- :mod:`core.pipeline.hf`: ``tokenizer.json`` → :class:`PipelineTokenizer`.
- :mod:`core.pipeline.sentencepiece`: SentencePiece ``.model`` (protobuf, parsed here) →
  :class:`PipelineTokenizer` with SentencePiece's own BPE.

Byte-level BPE files (tiktoken ranks, GPT-2 files, a ByteLevel ``tokenizer.json``) load
into the faster :class:`core.engine.tokenizer.Tokenizer` instead; both kinds answer the same
questions (encode, decode, details), so pages do not care which one they hold.
"""
