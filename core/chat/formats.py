"""Built-in chat formats for OpenAI's encodings, which ship no chat template of their own.

Each format is a Jinja template (rendered like any other, in :mod:`core.chat.sandbox`) plus
the special tokens it writes that the encoding itself lacks, with their IDs:

- **cl100k_base, ChatML** as tiktokenizer shows GPT-4 and GPT-3.5-turbo conversations
  (dqbd/tiktokenizer, ``src/sections/ChatGPTEditor.tsx`` for the layout,
  ``src/models/tokenizer.ts`` for the IDs): ``<|im_start|>`` 100264, ``<|im_end|>`` 100265,
  ``<|im_sep|>`` 100266. GPT-4: ``<|im_start|>{role}<|im_sep|>{content}<|im_end|>`` back to
  back; GPT-3.5-turbo: a newline after the role and between messages. tiktokenizer always
  ends with the assistant's header; here that is the generation prompt.
- **o200k_base, ChatML** as tiktokenizer shows GPT-4o: the same layout with 200264-200266.
- **o200k_base, harmony** (gpt-oss): the message layout of OpenAI's harmony format
  (cookbook "OpenAI Harmony Response Format"; token IDs from tiktoken's ``o200k_harmony``):
  ``<|start|>{role}<|message|>{content}<|end|>``, an assistant message on the ``final``
  channel (``<|channel|>final``), and ``<|start|>assistant`` as the generation prompt.
  gpt-oss's own template also writes a system message (date, reasoning effort, channels);
  here that is a message you write.

A format applies to a tokenizer whose content fingerprint is the preset's (the presets, or
the same rank file uploaded).

>>> from core.formats.presets import load_preset
>>> builtin_format(load_preset("cl100k_base")).names
['GPT-4 (ChatML)', 'GPT-3.5-turbo (ChatML)']
"""

from __future__ import annotations

from typing import Any

from core.chat.template import ChatTemplate

__all__ = ["FORMATS", "builtin_format"]

_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.name or m.role }}<|im_sep|>{{ m.content }}"
    "<|im_end|>{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant<|im_sep|>"
    "{% endif %}"
)
_CHATML_35 = (
    # newlines as expressions: trim_blocks would eat a newline written after a tag
    "{% for m in messages %}<|im_start|>{{ m.name or m.role }}{{ '\\n' }}{{ m.content }}"
    "<|im_end|>{% if not loop.last or add_generation_prompt %}{{ '\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}"
)
_HARMONY = (
    "{% for m in messages %}<|start|>{{ m.role }}{% if m.role == 'assistant' %}"
    "<|channel|>final{% endif %}<|message|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)
_TIKTOKENIZER = "tiktokenizer's ChatGPT editor (github.com/dqbd/tiktokenizer)"


def _chatml(first: int) -> tuple[tuple[str, int], ...]:
    return (("<|im_start|>", first), ("<|im_end|>", first + 1), ("<|im_sep|>", first + 2))


_HARMONY_TOKENS = (
    ("<|start|>", 200006), ("<|end|>", 200007), ("<|message|>", 200008),
    ("<|channel|>", 200005), ("<|return|>", 200002), ("<|call|>", 200012),
    ("<|constrain|>", 200003),
)  # fmt: skip

#: Preset fingerprint -> (format name, template, added specials, where it comes from).
FORMATS: dict[str, list[tuple[str, str, tuple[tuple[str, int], ...], str]]] = {
    "cd6a57e27a0ac600": [  # cl100k_base
        ("GPT-4 (ChatML)", _CHATML, _chatml(100264), _TIKTOKENIZER),
        ("GPT-3.5-turbo (ChatML)", _CHATML_35, _chatml(100264), _TIKTOKENIZER),
    ],
    "34793f21e1f15932": [  # o200k_base
        ("GPT-4o (ChatML)", _CHATML, _chatml(200264), _TIKTOKENIZER),
        ("gpt-oss (harmony)", _HARMONY, _HARMONY_TOKENS,
         "OpenAI's harmony format (cookbook.openai.com/articles/openai-harmony), tiktoken's "
         "o200k_harmony IDs"),
    ],
}


def builtin_format(tok: Any) -> ChatTemplate | None:
    """The built-in chat format for ``tok`` (its first entry is the default), or ``None``.

    >>> from core.formats.presets import load_preset
    >>> builtin_format(load_preset("gpt2")) is None
    True
    """
    rows = FORMATS.get(tok.fingerprint())
    if rows is None:
        return None
    return ChatTemplate(
        templates=tuple((name, text) for name, text, _, _ in rows),
        source="built-in",
        added_specials=tuple((name, token, i) for name, _, specials, _ in rows
                             for token, i in specials),
        default=rows[0][0],
        note="; ".join(f"{name}: {ref}" for name, _, _, ref in rows),
    )
