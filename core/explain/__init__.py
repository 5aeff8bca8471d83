"""Explainers over any tokenizer: replay, compare, evaluate, baselines, chat details."""
