"""The Chat mode's data and HTML, with no Streamlit import: a conversation as a link carries
it, and the rendered prompt as chips.

A conversation is a list of ``[role, content]`` pairs; a link carries it as that JSON list
(``chat=[["user","Hi"]]``), or as ``@<ID>`` of a stored text when long (``ui.link_targets``).

>>> parse_conversation('[["user", "Hi"], ["assistant", ""]]')
([['user', 'Hi'], ['assistant', '']], None)
>>> conversation_text([["user", "Hi"]])
'[["user","Hi"]]'
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from ui import chips, display

__all__ = [
    "DEFAULT_CONVERSATION",
    "MAX_MESSAGES",
    "ROLES",
    "chat_chips_html",
    "conversation_text",
    "messages_of",
    "parse_conversation",
]

#: The roles a message can have (what templates know; ``developer`` is harmony's).
ROLES = ("system", "user", "assistant", "developer", "tool")
#: What a fresh session shows: a system prompt and a question (as tiktokenizer starts).
DEFAULT_CONVERSATION: list[list[str]] = [
    ["system", "You are a helpful assistant."],
    ["user", "How many tokens does this conversation take? ¿Y en español? 日本語も。"],
]
#: Most messages the page edits at once.
MAX_MESSAGES = 50


def conversation_text(conversation: Sequence[Sequence[str]]) -> str:
    """The conversation as a link writes it: compact JSON, non-ASCII kept."""
    return json.dumps([list(m) for m in conversation], ensure_ascii=False, separators=(",", ":"))


def parse_conversation(text: str) -> tuple[list[list[str]] | None, str | None]:
    """A link's conversation: ``(pairs, None)``, or ``(None, why not)``; an unknown role
    becomes ``user`` and more than :data:`MAX_MESSAGES` are cut, each with a note (Markdown:
    the role as the link spells it, escaped).

    >>> parse_conversation("[1]")[1]
    'message 1 is not a [role, text] pair'
    >>> parse_conversation('[["wizard", "x"]]')  # doctest: +NORMALIZE_WHITESPACE
    ([['user', 'x']], 'message 1 has the role “wizard”, not one of system, user, assistant,
    developer, tool: shown as user')
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None, "it is not a JSON list of [role, text] pairs"
    if not isinstance(data, list) or not data:
        return None, "it is not a non-empty JSON list of [role, text] pairs"
    out: list[list[str]] = []
    notes: list[str] = []
    for i, item in enumerate(data[:MAX_MESSAGES], start=1):
        if not (isinstance(item, list) and len(item) == 2
                and all(isinstance(v, str) for v in item)):
            return None, f"message {i} is not a [role, text] pair"
        role, content = item
        if role not in ROLES:
            notes.append(f"message {i} has the role “{display.escaped(role[:30])}”, not one of "
                         f"{', '.join(ROLES)}: shown as user")
            role = "user"
        out.append([role, content])
    if len(data) > MAX_MESSAGES:
        notes.append(f"it has {len(data):,} messages; the first {MAX_MESSAGES} are shown")
    return out, "; ".join(notes) or None


def messages_of(conversation: Sequence[Sequence[str]]) -> list[dict[str, str]]:
    """The pairs as ``apply_chat_template`` takes them.

    >>> messages_of([["user", "Hi"]])
    [{'role': 'user', 'content': 'Hi'}]
    """
    return [{"role": role, "content": content} for role, content in conversation]


def chat_chips_html(details: Any, *, show_ids: bool, gpt2_view: bool,
                    limit: int | None = chips.MAX_CHIPS) -> str:
    """The rendered prompt's chips (``details``: :class:`core.explain.chat_details.ChatDetails`):
    special tokens dark, the template's other text dotted, the messages' text plain."""
    template_written = [t.index for t in details.tokens if not details.user_text[t.index]]
    return chips.chips_html(details.tokens, text=details.text, show_ids=show_ids,
                            gpt2_view=gpt2_view, limit=limit, muted=template_written)


def counts_html(roles: Sequence[str], counts: Sequence[int], tail: int, *,
                generation: bool) -> str:
    """One line of per-message counts: ``system 7 · user 12 · end 4``.

    >>> counts_html(["user"], [5], 3, generation=True)
    '<div class="tp-chat-counts"><span>1 · user <b>5</b></span> · <span>generation prompt <b>3</b></span></div>'
    """
    parts = [f"<span>{i} · {html.escape(role)} <b>{n:,}</b></span>"
             for i, (role, n) in enumerate(zip(roles, counts), start=1)]
    if tail:
        parts.append(f"<span>{'generation prompt' if generation else 'end'} <b>{tail:,}</b></span>")
    return f'<div class="tp-chat-counts">{" · ".join(parts)}</div>'
