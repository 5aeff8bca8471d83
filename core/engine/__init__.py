"""The engine: bytes, pre-tokenization, the BPE loop, the byte-level tokenizer and its
encode/decode, per-token details, and its own serialisation (CS336 pickles)."""
