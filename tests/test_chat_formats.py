"""core.chat.formats: OpenAI's encodings in chat, as tiktokenizer and tiktoken encode them.

The oracle for the ChatML formats is tiktokenizer's own recipe: its layout
(``getChatGPTEncoding`` in ``src/sections/ChatGPTEditor.tsx``, written out below) encoded
by tiktoken with the three ``<|im_*|>`` tokens added at tiktokenizer's IDs and every special
token allowed. For harmony: tiktoken's ``o200k_harmony`` encoding.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.chat import apply_chat_template, chat_template_of
from core.formats.presets import load_preset

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant"},
    {"role": "user", "content": "Hi <|endoftext|> 你好 <|im_end|>"},
    {"role": "assistant", "content": ""},
    {"role": "user", "content": "Bye\n\n"},
]


def tiktokenizer_text(messages: list[dict[str, str]], *, gpt35: bool) -> str:
    """tiktokenizer's getChatGPTEncoding, line for line."""
    msg_sep = "\n" if gpt35 else ""
    role_sep = "\n" if gpt35 else "<|im_sep|>"
    body = msg_sep.join(f"<|im_start|>{m.get('name') or m['role']}{role_sep}{m['content']}<|im_end|>"
                        for m in messages)
    return msg_sep.join([body, f"<|im_start|>assistant{role_sep}"])


def tiktokenizer_encoding(base: str, first: int) -> Any:
    import tiktoken

    enc = tiktoken.get_encoding(base)
    return tiktoken.Encoding(
        name=f"{base}-im", pat_str=enc._pat_str, mergeable_ranks=enc._mergeable_ranks,
        special_tokens={**enc._special_tokens, "<|im_start|>": first, "<|im_end|>": first + 1,
                        "<|im_sep|>": first + 2},
    )


CHATML = [("cl100k_base", "GPT-4 (ChatML)", False, 100264),
          ("cl100k_base", "GPT-3.5-turbo (ChatML)", True, 100264),
          ("o200k_base", "GPT-4o (ChatML)", False, 200264)]


@pytest.mark.parametrize("preset, name, gpt35, first", CHATML)
def test_chatml_as_tiktokenizer(tiktoken_cache: Any, preset: str, name: str, gpt35: bool,
                                first: int) -> None:
    tok = load_preset(preset)
    enc = tiktokenizer_encoding(preset, first)
    text = tiktokenizer_text(MESSAGES, gpt35=gpt35)
    kwargs = {"chat_template": name, "add_generation_prompt": True}
    assert apply_chat_template(tok, MESSAGES, tokenize=False, **kwargs) == text
    assert apply_chat_template(tok, MESSAGES, **kwargs) == enc.encode(text, allowed_special="all")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=3))
def test_chatml_any_text(contents: list[str]) -> None:
    import tiktoken  # noqa: F401 - the module-level fixture is not available to hypothesis

    messages = [{"role": "user", "content": c} for c in contents]
    tok = load_preset("cl100k_base")
    text = tiktokenizer_text(messages, gpt35=False)
    enc = tiktokenizer_encoding("cl100k_base", 100264)
    assert apply_chat_template(tok, messages, add_generation_prompt=True) == \
        enc.encode(text, allowed_special="all")


def test_default_and_generation_prompt() -> None:
    tok = load_preset("cl100k_base")
    one = [{"role": "user", "content": "x"}]
    assert chat_template_of(tok).default == "GPT-4 (ChatML)"
    assert apply_chat_template(tok, one, tokenize=False) == "<|im_start|>user<|im_sep|>x<|im_end|>"
    assert apply_chat_template(tok, one, tokenize=False, chat_template="GPT-3.5-turbo (ChatML)") \
        == "<|im_start|>user\nx<|im_end|>"
    assert chat_template_of(load_preset("gpt2")) is None


def test_harmony_as_o200k_harmony(tiktoken_cache: Any) -> None:
    import tiktoken

    tok = load_preset("o200k_base")
    messages = [{"role": "system", "content": "Reasoning: low"},
                {"role": "user", "content": "What is 2 + 2?"},
                {"role": "assistant", "content": "4"},
                {"role": "user", "content": "Και 3 + 3; <|end|>"}]
    text = apply_chat_template(tok, messages, tokenize=False, chat_template="gpt-oss (harmony)",
                               add_generation_prompt=True)
    assert text == ("<|start|>system<|message|>Reasoning: low<|end|>"
                    "<|start|>user<|message|>What is 2 + 2?<|end|>"
                    "<|start|>assistant<|channel|>final<|message|>4<|end|>"
                    "<|start|>user<|message|>Και 3 + 3; <|end|><|end|><|start|>assistant")
    harmony = tiktoken.get_encoding("o200k_harmony")
    assert apply_chat_template(tok, messages, chat_template="gpt-oss (harmony)",
                               add_generation_prompt=True) == \
        harmony.encode(text, allowed_special="all")
