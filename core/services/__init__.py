"""Services around tokenizers: the Hugging Face Hub, the saved-tokenizer library,
workspaces (shareable views)."""
