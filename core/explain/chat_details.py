"""What the Tokenize page's Chat mode draws: a rendered conversation's tokens, which message
each belongs to, and which are the template's own.

:func:`chat_details` renders the conversation (:mod:`core.chat`), encodes it with per-token
spans (``encode_details``; a built-in format's own special tokens become special tokens),
and finds each message's text in the rendered prompt. To find it even when a message is
empty or moved (Llama 3.1 takes the system message out of the loop), the conversation is
rendered a second time with each message's text (inside its outer whitespace) between
private-use markers; when that
render, markers removed, is the real one, the markers give every span exactly. Otherwise
(a template that trims or tests the content) each content is searched in order.

A token belongs to the first message whose text ends after the token starts: a message owns
its header (the role, the special tokens before it) and its text; what follows the last
message (closing tokens, the generation prompt) is the conversation's ``tail``.

>>> from core.chat import ChatTemplate
>>> from core.formats.presets import load_preset
>>> fmt = ChatTemplate.single("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}",
...                           source="example")
>>> d = chat_details(load_preset("gpt2"), fmt, [{"role": "user", "content": "Hi there"}])
>>> d.text, d.message_tokens, [t.text for t in d.tokens if d.user_text[t.index]]
('<user>Hi there', [5], ['Hi', ' there'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.chat import ChatTemplate, render_chat, split_added
from core.engine.details import EncodingDetails, TokenSpan

__all__ = ["ChatDetails", "chat_details", "message_spans"]

_END = "\ue000"  # closes a message's content in the marked render
_FIRST = 0xE100  # message i opens with chr(_FIRST + i)


@dataclass(frozen=True)
class ChatDetails:
    """A rendered conversation, tokenized.

    ``text``: the prompt as the model receives it; ``tokens``: its tokens with character
    spans (as :class:`core.engine.details.TokenSpan`); ``spans``: each message's text in ``text``
    (``None`` when it is not there); ``owner``: per token, the message it belongs to
    (``len(spans)`` for the tail); ``user_text``: per token, whether it lies inside a
    message's text (else the template wrote it); ``message_tokens``: tokens per message;
    ``tail_tokens``: the tokens after the last message; ``exact``: the spans come from the
    marked render (else from searching the text).
    """

    text: str
    tokens: list[TokenSpan]
    spans: list[tuple[int, int] | None]
    owner: list[int]
    user_text: list[bool]
    message_tokens: list[int]
    tail_tokens: int
    exact: bool

    @property
    def n_tokens(self) -> int:
        """How many tokens the model receives."""
        return len(self.tokens)

    @property
    def ids(self) -> list[int]:
        """The IDs, as ``apply_chat_template`` returns them."""
        return [t.id for t in self.tokens]


def _encode(tok: Any, template: ChatTemplate, text: str, name: str | None) -> list[TokenSpan]:
    """``encode_details`` of ``text``, with the format's added special tokens matched first."""
    added = template.added_for(name)
    if not added:
        return list(tok.encode_details(text).tokens)
    out: list[TokenSpan] = []
    offset = groups = pretokens = 0
    for piece, special_id in split_added(text, added):
        if special_id is not None:
            out.append(TokenSpan(len(out), special_id, piece.encode(), offset, offset + len(piece),
                                 piece, True, False, groups, pretokens))
            groups += 1
            pretokens += 1
        else:
            details: EncodingDetails = tok.encode_details(piece)
            for t in details.tokens:  # moved to the piece's place (built directly: fast)
                out.append(TokenSpan(len(out), t.id, t.token, t.start + offset, t.end + offset,
                                     t.text, t.is_special, t.partial, t.group + groups,
                                     t.pretoken + pretokens, t.piece))
            groups += 1 + max((t.group for t in details.tokens), default=0)
            pretokens += len(details.pretokens)
        offset += len(piece)
    return out


def _marked(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The messages with each string content between markers (``None`` if more than the
    markers can number, or a content already holds one)."""
    if len(messages) > 0xE100 - 0xE001 or not all(isinstance(m, Mapping) for m in messages):
        return None
    out = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, str):
            if any(_END <= c <= chr(_FIRST + len(messages)) for c in content):
                return None
            # around the text without its outer whitespace, so a template's trim keeps them
            core = content.strip()
            lead = content[: len(content) - len(content.lstrip())] if core else content
            trail = content[len(lead) + len(core):]
            m = {**m, "content": lead + chr(_FIRST + i) + core + _END + trail}
        out.append(dict(m))
    return out


def _unmark(marked: str, n: int) -> tuple[str, list[tuple[int, int] | None]]:
    """The marked render without its markers, and where each message's content went."""
    spans: list[tuple[int, int] | None] = [None] * n
    clean: list[str] = []
    length = 0
    opened: list[tuple[int, int]] = []
    for ch in marked:
        code = ord(ch)
        if _FIRST <= code < _FIRST + n:
            opened.append((code - _FIRST, length))
        elif ch == _END and opened:
            i, start = opened.pop()
            if spans[i] is None:  # a message written twice: its first place
                spans[i] = (start, length)
        else:
            clean.append(ch)
            length += len(ch)
    return "".join(clean), spans


def message_spans(text: str, messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int] | None]:
    """Each message's text in ``text``, searched in order (its content, else stripped).

    >>> message_spans("[a] hi [b] yo", [{"content": "hi"}, {"content": " yo "}, {}])
    [(4, 6), (11, 13), None]
    """
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for m in messages:
        content = m.get("content") if isinstance(m, Mapping) else None
        found = None
        if isinstance(content, str) and content.strip():
            for needle in (content, content.strip()):
                at = text.find(needle, cursor)
                if at >= 0:
                    found = (at, at + len(needle))
                    cursor = at + len(needle)
                    break
        spans.append(found)
    return spans


def chat_details(
    tok: Any, template: ChatTemplate, messages: Sequence[Mapping[str, Any]], *,
    add_generation_prompt: bool = False, name: str | None = None, **kwargs: Any,
) -> ChatDetails:
    """The conversation rendered by ``template`` (its template ``name``, else its default)
    and tokenized by ``tok`` (a :class:`~core.interface.DetailedTokenizer`), with each token's
    message. Raises :class:`core.chat.ChatTemplateError` when the template refuses."""
    options = {"add_generation_prompt": add_generation_prompt, "chat_template": name, **kwargs}
    text = render_chat(template, messages, **options)
    spans: list[tuple[int, int] | None] = []
    exact = False
    marked = _marked(messages)
    if marked is not None:
        try:
            clean, spans = _unmark(render_chat(template, marked, **options), len(messages))
            exact = clean == text
        except Exception:  # noqa: BLE001 - a template that refuses markers: search instead
            exact = False
    if not exact:
        spans = message_spans(text, messages)
    tokens = _encode(tok, template, text, name)
    # a message ends where its text ends; one not found ends where the previous one did
    ends: list[int] = []
    for span in spans:
        ends.append(span[1] if span is not None else (ends[-1] if ends else 0))
    owner: list[int] = []
    i = 0
    for t in tokens:
        while i < len(ends) and t.start >= ends[i]:
            i += 1
        owner.append(i)
    inside = []
    for t, o in zip(tokens, owner):
        span = spans[o] if o < len(spans) else None
        inside.append(span is not None and span[0] <= t.start and t.end <= span[1])
    counts = [0] * (len(messages) + 1)
    for o in owner:
        counts[o] += 1
    return ChatDetails(text, tokens, spans, owner, inside, counts[:-1], counts[-1], exact)
