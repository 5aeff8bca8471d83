"""core.explain.chat_details: the Chat mode's tokens, messages and template text."""

from __future__ import annotations

import pytest

from core.chat import ChatTemplate, apply_chat_template, chat_template_of
from core.explain.chat_details import chat_details, message_spans
from core.formats.presets import load_preset
from tests import chat_templates as T

MESSAGES = [
    {"role": "system", "content": "  Be brief.  "},
    {"role": "user", "content": "Hi 日本語 🧩"},
    {"role": "assistant", "content": ""},
    {"role": "user", "content": "Again: <|endoftext|>"},
]
TEMPLATES = {
    "built-in": None,
    "llama3 (trims)": ChatTemplate.single(T.LLAMA3, source="t", special_tokens={"bos_token": "<|endoftext|>"}),
    "llama3.1 (moves the system message)": ChatTemplate.single(
        T.LLAMA31, source="t", special_tokens={"bos_token": "<|endoftext|>"}),
    "qwen2.5": ChatTemplate.single(T.QWEN25, source="t"),
}


@pytest.mark.parametrize("generation", [False, True])
@pytest.mark.parametrize("name", list(TEMPLATES))
def test_tokens_messages_and_template_text(name: str, generation: bool) -> None:
    tok = load_preset("cl100k_base")
    template = TEMPLATES[name] or chat_template_of(tok)
    d = chat_details(tok, template, MESSAGES, add_generation_prompt=generation)
    # what the model receives: apply_chat_template's text and IDs
    assert d.text == apply_chat_template(tok, MESSAGES, chat_template=template, tokenize=False,
                                         add_generation_prompt=generation)
    assert d.ids == apply_chat_template(tok, MESSAGES, chat_template=template,
                                        add_generation_prompt=generation)
    assert d.exact  # every template here keeps the markers' places
    # every token belongs to one message or to the tail
    assert sum(d.message_tokens) + d.tail_tokens == d.n_tokens
    # the messages' own text is where they are, without the outer spaces a template trims
    for message, span in zip(MESSAGES, d.spans):
        assert span is not None and d.text[span[0]:span[1]] == message["content"].strip()
    # a token marked as the user's lies inside its message's text (a token that straddles
    # the edge, such as "\n\nBe", is the template's)
    for i, message in enumerate(MESSAGES):
        mine = b"".join(t.token for t in d.tokens if d.user_text[t.index] and d.owner[t.index] == i)
        assert mine.decode() in message["content"]
        assert bool(mine) == bool(message["content"].strip())
    # an empty message still owns its header (role, special tokens)
    assert d.message_tokens[2] > 0
    if generation:
        assert d.tail_tokens > 0


def test_typed_special_token_stays_a_special_token() -> None:
    tok = load_preset("cl100k_base")
    d = chat_details(tok, chat_template_of(tok), MESSAGES[3:])
    typed = [t for t in d.tokens if t.text == "<|endoftext|>"]
    assert len(typed) == 1 and typed[0].is_special and d.user_text[typed[0].index]


def test_search_when_markers_cannot_be_used() -> None:
    """A template that tests the content (`if m.content`) renders differently with markers:
    the messages are then searched in order."""
    tok = load_preset("gpt2")
    template = ChatTemplate.single(
        "{% for m in messages %}{% if m.content %}[{{ m.role }}]{{ m.content }}{% endif %}"
        "{% endfor %}", source="t")
    d = chat_details(tok, template, [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": ""},
                                     {"role": "user", "content": "yo"}])
    assert not d.exact
    assert d.spans == [(6, 8), None, (14, 16)]
    assert d.text == "[user]hi[user]yo"


def test_message_spans_in_order() -> None:
    assert message_spans("a b a", [{"content": "a"}, {"content": "a"}]) == [(0, 1), (4, 5)]
