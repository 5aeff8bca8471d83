"""Chat templates: a conversation as the model receives it, string for string and ID for ID
with ``transformers``' ``apply_chat_template``.

The template is a :class:`core.chat.template.ChatTemplate`: the tokenizer's own (from
``tokenizer_config.json``, ``chat_template.jinja`` or GGUF: :mod:`core.chat.template`), or a
built-in format for OpenAI's encodings (:mod:`core.chat.formats`).

:func:`apply_chat_template` follows ``PreTrainedTokenizerBase.apply_chat_template``
(transformers 5): messages with ``None`` values lose those keys, everything the template sees
is rebuilt from plain JSON types, a message's ``reasoning``/``thinking`` is aliased to
``reasoning_content``, the template gets ``messages``, ``tools``, ``documents``,
``add_generation_prompt``, the special tokens and ``**kwargs``; ``tokenize=True`` encodes the
rendered text with ``add_special_tokens=False``. The template runs in
:mod:`core.chat.sandbox` (transformers' sandbox plus limits).

>>> from core.explain.baselines import WordTokenizer
>>> chat = ChatTemplate.single("{% for m in messages %}[{{ m.role }}] {{ m.content }} {% endfor %}",
...                            source="example")
>>> apply_chat_template(WordTokenizer.train("hi"), [{"role": "user", "content": "hi"}],
...                     chat_template=chat, tokenize=False)
'[user] hi '
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from core.chat.formats import builtin_format
from core.chat.sandbox import DEFAULT_LIMITS, ChatTemplateError, Limits, render_template
from core.chat.template import (
    ChatTemplate,
    chat_template_from_config,
    chat_template_from_files,
    chat_template_from_gguf,
)

__all__ = [
    "ChatMethods",
    "ChatTemplate",
    "ChatTemplateError",
    "NoChatTemplateError",
    "apply_chat_template",
    "chat_template_from_config",
    "chat_template_from_files",
    "chat_template_from_gguf",
    "chat_template_of",
    "prepare_inputs",
    "render_chat",
    "with_chat",
]

if TYPE_CHECKING:
    from core.interface import Capabilities

#: Most messages a conversation may have (the page shows fewer).
MAX_MESSAGES = 1000


class NoChatTemplateError(ChatTemplateError):
    """The tokenizer has no chat template (and none was given)."""


def with_chat(tok: Any, capabilities: Capabilities) -> Capabilities:
    """``capabilities`` with ``chat`` set when ``tok`` has a chat template (its own or a
    built-in format): what the tokenizers' ``capabilities`` declare."""
    if chat_template_of(tok) is None:
        return capabilities
    return dataclasses.replace(capabilities, chat=True)


def chat_template_of(tok: Any) -> ChatTemplate | None:
    """The tokenizer's own chat template, else a built-in format for it, else ``None``."""
    own = getattr(tok, "chat_template", None)
    if own is not None:
        return own
    return builtin_format(tok)


# ─── transformers' input handling ────────────────────────────────────────────────────────

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def _plain(value: Any) -> Any:
    """``_plain_template_data``: JSON types rebuilt, anything else a ``<TypeName>`` string."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return f"<{type(value).__name__}>"


def _alias_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
    if reasoning is None:
        return message
    return {"thinking": reasoning, **message, "reasoning_content": reasoning}


def prepare_inputs(
    messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    documents: Sequence[Mapping[str, Any]] | None = None,
    special_tokens: Mapping[str, str] | None = None, **kwargs: Any,
) -> dict[str, Any]:
    """The variables a template sees, exactly as transformers builds them.

    >>> prepare_inputs([{"role": "user", "content": "hi", "name": None}])["messages"]
    [{'role': 'user', 'content': 'hi'}]
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ChatTemplateError("a conversation is a list of messages ({role, content})")
    if not messages:
        raise ChatTemplateError("the conversation is empty: add at least one message")
    if len(messages) > MAX_MESSAGES:
        raise ChatTemplateError(
            f"the conversation has {len(messages):,} messages, over the limit of {MAX_MESSAGES:,}"
        )
    chat = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ChatTemplateError(f"message {i + 1} is {type(message).__name__}, not a dict")
        chat.append(_alias_reasoning(_plain({k: v for k, v in message.items() if v is not None})))
    for what, items in (("tools", tools), ("documents", documents)):
        if items is not None and not all(isinstance(t, Mapping) for t in items):
            raise ChatTemplateError(f"{what} must be a list of JSON objects (dicts)")
    if kwargs.get("continue_final_message"):
        raise ChatTemplateError("continue_final_message is not supported here")
    kwargs.pop("continue_final_message", None)
    variables = {**dict(special_tokens or {}), **_plain(kwargs)}
    return {
        "messages": chat, "tools": _plain(list(tools) if tools is not None else None),
        "documents": _plain(list(documents) if documents is not None else None),
        "add_generation_prompt": add_generation_prompt, **variables,
    }


# ─── the entry point ─────────────────────────────────────────────────────────────────────


def render_chat(
    template: ChatTemplate, messages: Sequence[Mapping[str, Any]], *,
    add_generation_prompt: bool = False, tools: Sequence[Mapping[str, Any]] | None = None,
    chat_template: str | None = None, limits: Limits = DEFAULT_LIMITS, **kwargs: Any,
) -> str:
    """The rendered conversation (``tokenize=False``), with ``template``'s special tokens.

    >>> render_chat(ChatTemplate.single("{{ messages | length }}", source="x"), [{}])
    '1'
    """
    source = template.get(chat_template, tools=tools)
    variables = prepare_inputs(
        messages, add_generation_prompt=add_generation_prompt, tools=tools,
        special_tokens=template.special_tokens_map, **kwargs,
    )
    return render_template(source, variables, limits=limits)


def encode_rendered(tok: Any, template: ChatTemplate, text: str, *,
                    name: str | None = None) -> list[int]:
    """IDs of a rendered conversation: ``tok.encode(text)`` (no BOS/EOS added), with the
    format's own special tokens (``added_specials``) matched first, as tiktoken does with
    extra special tokens.

    >>> from core.explain.baselines import WordTokenizer
    >>> fmt = ChatTemplate((("default", ""),), "x", added_specials=(("default", "<|x|>", 99),))
    >>> encode_rendered(WordTokenizer.train("hi"), fmt, "<|x|>hi")
    [99, 0]
    """
    added = template.added_for(name)
    if not added:
        return list(tok.encode(text, add_special_tokens=False))
    ids: list[int] = []
    for piece, special_id in split_added(text, added):
        if special_id is not None:
            ids.append(special_id)
        elif piece:
            ids.extend(tok.encode(piece, add_special_tokens=False))
    return ids


def split_added(text: str, added: Sequence[tuple[str, int]]) -> list[tuple[str, int | None]]:
    """``text`` cut at the format's special tokens: ``(piece, ID or None for plain text)``.

    >>> split_added("a<x>b", [("<x>", 7)])
    [('a', None), ('<x>', 7), ('b', None)]
    """
    table = dict(added)
    pattern = re.compile("|".join(re.escape(t) for t in sorted(table, key=len, reverse=True)))
    out: list[tuple[str, int | None]] = []
    last = 0
    for match in pattern.finditer(text):
        out.append((text[last:match.start()], None))
        out.append((match.group(), table[match.group()]))
        last = match.end()
    out.append((text[last:], None))
    return [(p, i) for p, i in out if p or i is not None]


def apply_chat_template(
    tok: Any, messages: Sequence[Mapping[str, Any]], *,
    add_generation_prompt: bool = False, tokenize: bool = True,
    tools: Sequence[Mapping[str, Any]] | None = None, chat_template: ChatTemplate | str | None = None,
    limits: Limits = DEFAULT_LIMITS, **kwargs: Any,
) -> str | list[int]:
    """``tok``'s ``apply_chat_template``: the rendered text (``tokenize=False``) or its IDs.

    ``chat_template``: a :class:`ChatTemplate` to use instead of the tokenizer's; or, as in
    transformers, the name of one of its templates or a template's text. ``**kwargs`` reach
    the template (``documents``, ``enable_thinking``, ``date_string``...).
    """
    name = chat_template if isinstance(chat_template, str) else None
    template = chat_template if isinstance(chat_template, ChatTemplate) else chat_template_of(tok)
    if template is None:
        if name is None:
            raise NoChatTemplateError(
                f"{getattr(tok, 'name', '') or 'this tokenizer'} has no chat template: load its "
                "tokenizer_config.json or chat_template.jinja with it, or pass chat_template="
            )
        template = ChatTemplate.single(name, source="given")
    text = render_chat(template, messages, add_generation_prompt=add_generation_prompt,
                       tools=tools, chat_template=name, limits=limits, **kwargs)
    return encode_rendered(tok, template, text, name=name) if tokenize else text


class ChatMethods:
    """What the tokenizer classes mix in (:class:`core.engine.tokenizer.Tokenizer`,
    :class:`core.pipeline.tokenizer.PipelineTokenizer`): ``chat_template``, the template read
    beside the tokenizer's file (``None``: none, or a built-in format), and
    ``apply_chat_template``, which is :func:`apply_chat_template` on the tokenizer.

    >>> from core.formats.presets import load_preset
    >>> load_preset("cl100k_base").apply_chat_template([{"role": "user", "content": "Hi"}])
    [100264, 882, 100266, 13347, 100265]
    """

    chat_template: ChatTemplate | None = None

    def apply_chat_template(
        self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = False,
        tokenize: bool = True, tools: Sequence[Mapping[str, Any]] | None = None, **kwargs: Any,
    ) -> str | list[int]:
        """``transformers``' ``apply_chat_template``: the rendered conversation
        (``tokenize=False``) or its IDs (see :func:`apply_chat_template`)."""
        return apply_chat_template(self, messages, add_generation_prompt=add_generation_prompt,
                                   tokenize=tokenize, tools=tools, **kwargs)
