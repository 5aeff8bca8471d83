"""The Tokenize page's Chat mode: a conversation as the model receives it, with its chat
template, as chips and counts.

The conversation is one session value (``tok.chat``: ``[[role, content], ...]``), carried by
the link (``chat=``, ``@<ID>`` when long) like the text. Each message is a role picker and a
live text box (``ui.live_input.live``) bound to its place in that list; the buttons beside it
move it up, move it down or remove it. The template is the model's own (``tokenizer_config.json``,
``chat_template.jinja``, GGUF) or a built-in format (``core.chat.formats``); a model with
none gets a note and a plain ``role: text`` layout, so its counts still show.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from core.chat import ChatTemplate, chat_template_of
from core.chat.sandbox import Limits
from core.explain.chat_details import ChatDetails, chat_details
from core.interface import TokenizerInterface
from ui import (
    cache,
    chat_view,
    chips,
    display,
    html_block,
    keys,
    links,
    live_input,
    stat_row,
    state,
    widgets,
)
from ui.stat_row import Stat

__all__ = ["MODES", "chat_mode", "is_chat"]

MODES = ("Text", "Chat")
#: The layout a model with no chat template is counted with.
PLAIN = ChatTemplate.single(
    "{% for m in messages %}{{ m.role }}: {{ m.content }}{{ '\\n\\n' }}{% endfor %}",
    source="no template (plain role: text lines)")
PICKED = "tok.chat.picked"  # the number of the message the action buttons act on
MESSAGES_KEY = "tok-chat-messages"  # the container of the message boxes (one live component)
#: A template's output may be a few times the typed text (headers, tool lists), no more.
LIMITS = Limits(chars=4 * cache.MAX_TEXT_CHARS + 100_000)


def is_chat() -> bool:
    """The Text | Chat switch (bound to ``tok.mode``); True in Chat mode."""
    mode = st.radio("Input", MODES, horizontal=True, label_visibility="collapsed",
                    format_func=lambda m: "Plain text" if m == "Text" else "💬 Chat",
                    **state.bind(keys.TOK_MODE, "Text"),
                    help="Chat: messages laid out by the model's chat template, as the model "
                         "receives them.")
    return mode == "Chat"


# ─── the conversation in the session ─────────────────────────────────────────────────────


def conversation() -> list[list[str]]:
    """The session's conversation (the default one in a fresh session)."""
    value = state.value(keys.TOK_CHAT)
    if not value:
        value = [list(m) for m in chat_view.DEFAULT_CONVERSATION]
        state.set_value(keys.TOK_CHAT, value)
    return value


def _edited(index: int, field: int, widget_key: str) -> None:
    chat = [list(m) for m in conversation()]
    if index < len(chat):
        chat[index][field] = st.session_state[widget_key]
        state.set_value(keys.TOK_CHAT, chat)


def _move(index: int, step: int) -> None:
    chat = [list(m) for m in conversation()]
    other = index + step
    if 0 <= other < len(chat):
        chat[index], chat[other] = chat[other], chat[index]
        state.set_value(keys.TOK_CHAT, chat)


def _remove(index: int) -> None:
    chat = [list(m) for m in conversation()]
    if len(chat) > 1:
        del chat[index]
        state.set_value(keys.TOK_CHAT, chat)


def _add() -> None:
    chat = [list(m) for m in conversation()]
    if len(chat) < chat_view.MAX_MESSAGES:
        last = chat[-1][0] if chat else "assistant"
        chat.append(["assistant" if last == "user" else "user", ""])
        state.set_value(keys.TOK_CHAT, chat)


def _bound(index: int, field: int, value: str) -> dict[str, Any]:
    """Widget kwargs for one field of one message: the box shows the session's value (set only
    when it differs, as ``ui.state.bind`` does) and writes its edits back into the list."""
    widget_key = f"_w.tok.chat.{('role', 'text')[field]}.{index}"
    if st.session_state.get(widget_key) != value:
        st.session_state[widget_key] = value
    return {"key": widget_key, "on_change": _edited, "args": (index, field, widget_key)}


# ─── computing ───────────────────────────────────────────────────────────────────────────


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def _details(tok_key: str, template_key: str, chat_json: str, generation: bool, name: str,
             _tok: TokenizerInterface, _template: ChatTemplate) -> ChatDetails:
    messages = chat_view.messages_of(json.loads(chat_json))
    return chat_details(_tok, _template, messages, add_generation_prompt=generation,
                        name=name or None, limits=LIMITS)


def _within_limit(chat: list[list[str]]) -> list[list[str]]:
    """The conversation cut to ``TOKPLAY_MAX_TEXT_CHARS`` characters in all (with a warning)."""
    room = cache.MAX_TEXT_CHARS
    kept = []
    for role, content in chat:
        kept.append([role, content[:room]])
        room = max(room - len(content), 0)
    if room == 0 and sum(len(c) for _, c in chat) > cache.MAX_TEXT_CHARS:
        st.warning(f"The messages hold more than {cache.MAX_TEXT_CHARS:,} characters in all; "
                   "the rest is left out (TOKPLAY_MAX_TEXT_CHARS).", icon="✂️")
    return kept


def _template_for(label: str, tok: TokenizerInterface) -> tuple[ChatTemplate, str | None]:
    """The template to use and its chosen name (``None``: its default); a note when the
    model has none."""
    template = chat_template_of(tok)
    if template is None:
        st.info(f"“{display.escaped(label)}” has no chat template, so the messages are counted "
                "as plain “role: text” lines. Load its tokenizer_config.json or "
                "chat_template.jinja with its tokenizer.json (📂 in the sidebar), or pick GPT-4 "
                "or GPT-4o, whose chat formats are built in.", icon="💬")
        return PLAIN, None
    names = template.names
    # transformers refuses a list of templates with none named default: the first, here
    default = template.default if template.default in names else names[0]
    chosen = state.value(keys.TOK_CHAT_TEMPLATE) or default
    if chosen not in names:
        chosen = default
    if len(names) > 1:
        chosen = st.selectbox("Chat template", names, index=names.index(chosen),
                              key="tok.chat.template_pick",
                              help="This model ships several templates; transformers uses "
                                   f"“{template.default}” unless told otherwise.")
    state.set_value(keys.TOK_CHAT_TEMPLATE, "" if chosen == default else chosen)
    return template, chosen


# ─── drawing ─────────────────────────────────────────────────────────────────────────────


def _editor(chat: list[list[str]], details: ChatDetails | None) -> None:
    """One row per message (role, live text box, its token count), then one row of actions
    on a chosen message: few widgets per message, as each Streamlit widget costs every
    later widget of the run a little (its session-state scan)."""
    roles = list(chat_view.ROLES)
    with st.container(key=MESSAGES_KEY):
        for i, (role, content) in enumerate(chat):
            row = st.columns([1.3, 7], vertical_alignment="top")
            with row[0]:
                st.selectbox(f"Role of message {i + 1}", roles, label_visibility="collapsed",
                             **_bound(i, 0, role if role in roles else "user"))
                if details is not None and i < len(details.message_tokens):
                    st.caption(f"#{i + 1} · {details.message_tokens[i]:,} tokens")
            with row[1]:
                st.text_area(f"Message {i + 1}", height=68, label_visibility="collapsed",
                             placeholder="Message text", **_bound(i, 1, content))
    live_input.live(MESSAGES_KEY)  # one live-typing component for every message box
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.button("＋ Add message", key="tok.chat.add", on_click=_add,
                  disabled=len(chat) >= chat_view.MAX_MESSAGES)
        if st.session_state.get(PICKED, 1) > len(chat):  # a message was removed
            st.session_state[PICKED] = len(chat)
        picked = st.number_input("Message", min_value=1, max_value=len(chat), step=1,
                                 key=PICKED, label_visibility="collapsed",
                                 width=110, help="The message the buttons at its right act on")
        i = min(int(picked or 1), len(chat)) - 1
        st.button("↑", key="tok.chat.up", on_click=_move, args=(i, -1), disabled=i == 0,
                  help="Move this message up")
        st.button("↓", key="tok.chat.down", on_click=_move, args=(i, 1),
                  disabled=i == len(chat) - 1, help="Move this message down")
        st.button("✕", key="tok.chat.remove", on_click=_remove, args=(i,),
                  disabled=len(chat) == 1, help="Remove this message")


@st.fragment
def chat_mode(label: str, show_ids: bool, gpt2_view: bool) -> None:
    """The Chat mode: messages, the rendered prompt as chips, counts and the link. A
    fragment, like the text mode: editing a message reruns only this."""
    link_slot = st.container()
    loaded = widgets.load_tokenizer(label)
    if loaded is None:
        with link_slot:
            links.share("Tokenize")
        return
    label, tok = loaded
    if not tok.capabilities.details:
        st.info("The word- and char-level baselines have no special tokens and no chat "
                "template: pick a model's tokenizer for the Chat mode.", icon="💬")
        with link_slot:
            links.share("Tokenize")
        return
    template, name = _template_for(label, tok)
    generation = st.toggle("Add the generation prompt", **state.bind(keys.TOK_CHAT_GEN, True),
                           help="add_generation_prompt=True: end with the header that asks the "
                                "model for the assistant's reply.")
    chat = _within_limit(conversation())
    details, problem = None, None
    try:
        details = _details(state.tokenizer_key(label), template.fingerprint(),
                           chat_view.conversation_text(chat), generation, name or "", tok,
                           template)
    except Exception as err:  # noqa: BLE001 - the template's refusal, shown in one line
        problem = err
    with link_slot:
        links.share("Tokenize")
    _editor(conversation(), details)
    if problem is not None:
        widgets.show_error(problem, what="The chat template cannot render this conversation")
    else:
        _prompt(details, chat, show_ids=show_ids, gpt2_view=gpt2_view, generation=generation)
    with st.expander(f"Chat template · {display.escaped(template.source)}"):
        if template.note:
            st.caption(display.escaped(template.note))
        st.code(template.get(name), language=None)


def _prompt(details: Any, chat: list[list[str]], *, show_ids: bool, gpt2_view: bool,
            generation: bool) -> None:
    stat_row.show([Stat("Tokens", f"{details.n_tokens:,}"), Stat("Messages", f"{len(chat):,}"),
                   Stat("Template tokens", f"{details.n_tokens - sum(details.user_text):,}",
                        help="Tokens the chat template writes around the messages' text."),
                   Stat("Characters", f"{len(details.text):,}")], key="chat-stats")
    html_block.draw(chat_view.chat_chips_html(details, show_ids=show_ids, gpt2_view=gpt2_view))
    if details.n_tokens > chips.MAX_CHIPS:
        st.caption(f"Showing the first {chips.MAX_CHIPS:,} of {details.n_tokens:,} tokens.")
    st.caption("Dark chips: special tokens; dotted: the template's own text; plain: the "
               "messages' text. A message counts its header and its text.")
    html_block.draw(chat_view.counts_html([r for r, _ in chat], details.message_tokens,
                                  details.tail_tokens, generation=generation))
    widgets.copy_row("🔢 IDs", ", ".join(map(str, details.ids)), key="tok-chat-ids",
                     help="What apply_chat_template(messages) returns.")
