"""The URL parameters: one row of :data:`PARAMS` each, with how a link's value is checked
into the session and how the session's value is written back out.

=========  =======================  =====================================================
name       pages                    value
=========  =======================  =====================================================
tok        all but Train and Home   a preset/baseline label ("GPT-2 (gpt2)"), a preset name
                                    ("gpt2"), or a saved tokenizer ``lib:<16 hex>``;
                                    Compare and Evaluate repeat it (``tok=A&tok=B``)
model      all but Train and Home   a Hugging Face Hub model ID (``Qwen/Qwen3-8B``): the
                                    model's tokenizer, loaded by the server
                                    (``ui.hub_models``); or ``gguf:<name>`` of a local GGUF
                                    model the server lists (``ui.local_models``: a name
                                    looked up in its own list, never a path); Compare
                                    repeats it and adds it to its ``tok`` list; ``tok``
                                    never names either
text       Tokenize, Compare,       the text, or ``@<16 hex>``: a long text stored on the
           Replay, Evaluate         server (``TokenizerLibrary.save_text``)
ids        Decode                   the IDs as typed (or ``@<id>`` when long)
word       Tokenize                 the pre-token of the "why this split" trace
tab        Tokenize                 the open tab: ``pre``, ``why`` or ``export``
show_ids   Tokenize                 ``1`` / ``0`` (IDs inline)
gpt2       Tokenize                 ``1`` / ``0`` (GPT-2 byte view)
special    Tokenize                 ``1`` / ``0`` (the model's special tokens added)
q          Vocabulary               the search text
order      Vocabulary               one of ``ui.cache.VOCAB_ORDERS``
token      Vocabulary               the selected token ID
k          Replay                   the step: how many of the tokenizer's merges are applied
mode       Tokenize                 ``text`` or ``chat`` (``ui.chat``)
chat       Tokenize                 the conversation, JSON ``[[role, text], ...]``, or
                                    ``@<16 hex>`` of a stored one when long
gen        Tokenize                 ``1`` / ``0`` (the chat's generation prompt)
tpl        Tokenize                 the chat template's name, when the model has several
src        Evaluate                 the texts (repeated): ``typed``, ``builtin``,
                                    ``lang:<code>``, ``file:<blob>:<name>`` (``ui.evaluate``)
focus      Evaluate                 ``i.j``: the token tables show tokenizer i on text j
corpus     Train                    a corpus the server lists (``TOKPLAY_CORPUS_DIRS``), by
                                    its name there (``owt/train.txt``): looked up in the
                                    server's list (``ui.corpus_dirs``), never a path
page       Home                     a page's URL path (``Tokenize``): open that page with
                                    the other parameters. The static build's links use it,
                                    as a static host serves one page (``index.html``)
ws         every page               the session's workspace snapshot (``ui.workspace``):
                                    its trained and uploaded tokenizers, last training and
                                    corpus; written by ``ui.workspace.save``, not a PARAMS row
=========  =======================  =====================================================

Each parameter is one row of :data:`PARAMS` (name, pages and session keys, how a link's
value is checked in, how the session's value is written out, its default): adding one is one
row, plus its ``apply`` function if no existing one fits. ``page`` and ``ws`` are not rows:
``ui.links`` reads and writes them. The saved tokenizers and stored texts that ``tok``,
``text`` and ``ids`` can name are read and written by ``ui.link_targets``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from core.errors import HubError
from core.services.hub import check_repo_id
from ui import (
    corpus_dirs,
    display,
    eval_sources,
    hub_models,
    keys,
    limits,
    local_models,
    model_picker,
    runtime,
    state,
    train_form,
)
from ui.cache import VOCAB_ORDERS
from ui.chat_view import DEFAULT_CONVERSATION, conversation_text, parse_conversation
from ui.eval_sources import DEFAULT_SOURCES
from ui.link_targets import (
    link_name,
    resolve_tokenizer,
    shown,
    text_for_link,
    text_from_link,
    unsaved_note,
)

__all__ = [
    "DEFAULT_COMPARE",
    "DEFAULT_TOKENIZER",
    "PAGE_PARAMS",
    "PARAMS",
    "TAB_NAMES",
    "Applier",
    "UrlParam",
    "cut_at_id_boundary",
    "params_of",
    "parse_flag",
]

#: ``apply(page, session key, values)``: check a link's values into the session; a note if not.
Applier = Callable[[str, str, tuple[str, ...]], "str | None"]

_MAX_WORD_CHARS = 200
#: Pages that show several tokenizers (``tok=A&tok=B``): session key -> how many at most.
_MULTI_TOK = {keys.CMP_TOKENIZERS: 4, keys.EVA_TOKENIZERS: 6}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_flag(value: str) -> bool | None:
    """``"1"``/``"true"``/``"on"`` -> True, ``"0"``/``"false"``/``"off"`` -> False, else None.

    >>> parse_flag("1"), parse_flag("Off"), parse_flag("maybe")
    (True, False, None)
    """
    v = value.strip().lower()
    return True if v in _TRUE else False if v in _FALSE else None


# ---------------------------------------------------------------------------------------------
# Link -> session: each parameter's check (a note when a value cannot be used)


def _apply_tok(page: str, key: str, values: tuple[str, ...]) -> str | None:
    if key in _MULTI_TOK:
        most = _MULTI_TOK[key]
        labels, problems = [], []
        for name in values[:8]:
            label, problem = resolve_tokenizer(name)
            if label is not None and label not in labels:
                labels.append(label)
            elif problem:
                problems.append(problem)
        if len(values) > 8:
            problems.append(f"the link names {len(values)} tokenizers; {page} shows at most {most}")
        if labels:
            state.set_value(key, labels[:most])
        if problems:
            others = "Comparing" if page == "Compare" else "Showing"
            return "; ".join(problems) + f". {others} the others."
        return None
    label, problem = resolve_tokenizer(values[-1])
    if label is None:
        return (f"{problem[0].upper()}{problem[1:]}. "  # type: ignore[index]
                f"Showing “{display.escaped(state.current_label())}” instead.")
    state.set_active(label)
    return None


def _open_linked_model(raw: str) -> tuple[str | None, str | None]:
    """``(label, None)`` once the model a link names is loaded, else ``(None, why not)``.

    ``raw`` is ``org/name`` (checked before any request: a link is untrusted) or
    ``gguf:<name>`` (only a name the server lists). A model that cannot load is neither
    made active nor remembered (``ui.model_picker.open_model``)."""
    if raw.startswith(local_models.LINK_PREFIX):
        label, problem = local_models.from_link(raw)
        if label is None:
            return None, f"{shown(raw)} {problem}"
        problem = model_picker.load_problem(label)
    else:
        try:
            repo = check_repo_id(hub_models.clean_repo_id(raw[:_MAX_WORD_CHARS]))
        except HubError:
            return None, f"{shown(raw)} is not a Hugging Face model ID (org/name)"
        opened: list[str] = []
        problem = model_picker.open_model(repo, opened.append)
        label = opened[0] if opened else None
    if problem is not None:  # (it quotes the ID, or a local file's name)
        return None, f"{shown(raw)} cannot be loaded: {display.escaped(problem)}"
    return label, None


def _apply_model(page: str, key: str, values: tuple[str, ...]) -> str | None:
    """``model=org/name`` or ``model=gguf:<name>`` (the last one counts; Compare takes
    each), opened as the picker's 🤗 box opens one (:func:`_open_linked_model`): a model
    that cannot load leaves the tokenizer in use as it was, and the note says why."""
    if runtime.in_browser():
        return ("The link names a Hugging Face model, which this version of the playground "
                "(running in your browser, with no server) cannot open.")
    if key != keys.CMP_TOKENIZERS:
        label, problem = _open_linked_model(values[-1])
        if label is None:
            showing = display.escaped(state.current_label())
            return f"The link's model {problem}; showing “{showing}” instead."
        state.set_active(label)
        return None
    # with tok= in the same link, its tokenizers come first; else the models alone
    labels = list((state.value(key) or []) if "tok" in st.query_params else [])
    problems: list[str] = []
    for raw in values[:8]:
        if len(labels) == 4:  # Compare shows four: the rest are not loaded
            break
        label, problem = _open_linked_model(raw)
        if problem is not None:
            problems.append(problem)
        elif label is not None and label not in labels:
            labels.append(label)
    if labels:
        state.set_value(key, labels)
    if not problems:
        return None
    return ("The link's model " + "; the link's model ".join(problems)
            + ". Comparing the others.")


def _apply_long(key: str, values: tuple[str, ...], *, what: str, previous: str, cap: int,
                cut_note: Callable[[int, int], str],
                cut: Callable[[str, int], str] = lambda text, cap: text[:cap]) -> str | None:
    """A ``text`` / ``ids`` value (the text itself, or ``@<ID>`` of a stored one) into
    ``key``, at most ``cap`` characters (``cut`` shortens it); ``cut_note(length, kept)``
    says what was cut."""
    raw = values[-1]
    text, problem = text_from_link(raw[: limits.MAX_PARAM_CHARS], what=what)
    if text is None:
        return f"{problem[0].upper()}{problem[1:]}. Showing {previous} instead."  # type: ignore[index]
    kept = cut(text, cap) if len(text) > cap else text
    state.set_value(key, kept)
    if len(raw) > limits.MAX_PARAM_CHARS or len(text) > cap:
        stored = raw.startswith("@")  # then the length that matters is the stored text's
        return cut_note(len(text) if stored else len(raw), len(kept))
    return None


def cut_at_id_boundary(text: str, cap: int) -> str:
    """At most ``cap`` characters of an ID list, never ending inside an ID.

    >>> cut_at_id_boundary("1, 22, 333", 8), cut_at_id_boundary("1, 22, 333", 7)
    ('1, 22', '1, 22, ')
    """
    head = text[:cap]
    if 0 < cap < len(text) and text[cap - 1] not in _ID_SEPARATORS \
            and text[cap] not in _ID_SEPARATORS:  # the cut falls inside an ID: drop it
        head = head[: max(head.rfind(c) for c in _ID_SEPARATORS) + 1].rstrip(_ID_SEPARATORS)
    return head


_ID_SEPARATORS = " ,\n\t[]"


def _apply_text(page: str, key: str, values: tuple[str, ...]) -> str | None:
    return _apply_long(
        key, values, what="text", cap=limits.max_text_chars(),
        previous="your previous text" if state.value(key) is not None else "the sample text",
        cut_note=lambda n, kept: (f"The link's text has {n:,} characters; this server keeps "
                                  f"the first {kept:,} (TOKPLAY_MAX_TEXT_CHARS)."))


def _apply_ids(page: str, key: str, values: tuple[str, ...]) -> str | None:
    max_ids = limits.max_ids()
    return _apply_long(
        key, values, what="IDs", cut=cut_at_id_boundary,
        cap=max_ids * 12,  # generous: up to 11 digits and a separator per ID
        previous=("your previous IDs" if state.value(key) is not None
                  else "the IDs of the Tokenize page's text"),
        cut_note=lambda n, kept: (
            f"The link's ID list is {n:,} characters long; only its first {kept:,} characters "
            f"(whole IDs) are used. This server decodes at most {max_ids:,} IDs "
            "(TOKPLAY_MAX_IDS)."))


def _apply_word(page: str, key: str, values: tuple[str, ...]) -> str | None:
    word = values[-1]
    if len(word) > _MAX_WORD_CHARS:
        return (f"The link's word {shown(word)} is longer than any pre-token shown here; "
                "tracing the longest word of the text instead.")
    state.set_value(key, word)
    return None


def _flag(what: str) -> Applier:
    def apply(page: str, key: str, values: tuple[str, ...]) -> str | None:
        flag = parse_flag(values[-1])
        if flag is None:
            return (f"The link's {what} setting {shown(values[-1])} is not 1 or 0; "
                    "keeping the current setting.")
        state.set_value(key, flag)
        return None

    return apply


def _apply_query(page: str, key: str, values: tuple[str, ...]) -> str | None:
    q = values[-1]
    if len(q) > _MAX_WORD_CHARS:
        return f"The link's search {shown(q)} is too long (at most {_MAX_WORD_CHARS}); ignored."
    state.set_value(key, q)
    return None


#: Tokenize's tabs as links name them (``tab=why``).
TAB_NAMES: dict[str, str] = dict(zip(("pre", "why", "export"), keys.TOK_TABS, strict=True))


def _apply_tab(page: str, key: str, values: tuple[str, ...]) -> str | None:
    if values[-1] not in TAB_NAMES:
        return (f"The link's tab {shown(values[-1])} is not one of {', '.join(TAB_NAMES)}; "
                "showing the pre-tokens.")
    state.set_value(key, TAB_NAMES[values[-1]])
    return None


def _tab_name(label: Any) -> str:
    return next((name for name, tab in TAB_NAMES.items() if tab == label), "pre")


def _apply_order(page: str, key: str, values: tuple[str, ...]) -> str | None:
    if values[-1] not in VOCAB_ORDERS:
        return (f"The link's order {shown(values[-1])} is not one of "
                f"{', '.join(VOCAB_ORDERS)}; keeping the current order.")
    state.set_value(key, values[-1])
    return None


def _apply_token(page: str, key: str, values: tuple[str, ...]) -> str | None:
    raw = values[-1].strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 12):
        return (f"The link's token {shown(values[-1])} is not a token ID (a whole number "
                "0 or more); showing the current token instead.")
    state.set_value(key, int(raw))
    return None


def _apply_mode(page: str, key: str, values: tuple[str, ...]) -> str | None:
    mode = values[-1].strip().capitalize()
    if mode not in ("Text", "Chat"):
        return f"The link's mode {shown(values[-1])} is not text or chat; showing text."
    state.set_value(key, mode)
    return None


def _apply_chat(page: str, key: str, values: tuple[str, ...]) -> str | None:
    """``chat=``: a JSON list of [role, text] pairs, or ``@<ID>`` of a stored one."""
    text, problem = text_from_link(values[-1][: limits.MAX_PARAM_CHARS], what="conversation")
    if text is None:
        return f"{problem[0].upper()}{problem[1:]}. Showing the previous conversation."  # type: ignore[index]
    chat, note = parse_conversation(text)
    if chat is None:
        return f"The link's conversation cannot be read ({note}); showing the previous one."
    state.set_value(key, chat)
    return f"The link's conversation: {note}." if note else None


def _apply_template_name(page: str, key: str, values: tuple[str, ...]) -> str | None:
    if len(values[-1]) > _MAX_WORD_CHARS:
        return f"The link's chat template name {shown(values[-1])} is too long; using the default."
    state.set_value(key, values[-1])  # the page checks it against the model's templates
    return None


def _apply_step(page: str, key: str, values: tuple[str, ...]) -> str | None:
    raw = values[-1].strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9):
        return (f"The link's step {shown(values[-1])} is not a number of merges (a whole "
                "number 0 or more); showing the current step instead.")
    state.set_value(key, int(raw))  # the page checks it against the tokenizer's merges
    return None


def _apply_sources(page: str, key: str, values: tuple[str, ...]) -> str | None:
    picked, problems = [], []
    for sid in values[:8]:  # the page's MAX_TEXTS
        if sid.startswith("file:") and sid not in eval_sources.uploads():
            if reason := eval_sources.upload_from_link(sid[:300]):
                problems.append(f"the text {shown(sid.split(':', 2)[-1])}: {reason}")
                continue
        if eval_sources.source_text(sid) is None:
            problems.append(f"the link names the text {shown(sid)}, which this server does not have")
            continue
        if sid not in picked:
            picked.append(sid)
    state.set_value(key, picked)
    if not problems:
        return None
    joined = "; ".join(problems)  # (not .capitalize(): it would lower-case the link's values)
    return f"{joined[0].upper()}{joined[1:]}. Showing the others."


def _apply_focus(page: str, key: str, values: tuple[str, ...]) -> str | None:
    i, dot, j = values[-1].strip().partition(".")
    if not (dot and i.isascii() and i.isdigit() and j.isascii() and j.isdigit()
            and len(i) <= 2 and len(j) <= 2):
        return (f"The link's focus {shown(values[-1])} is not two numbers such as `1.0` "
                "(tokenizer, text); showing the first pair.")
    state.set_value(key, f"{int(i)}.{int(j)}")  # the page checks it against its picks
    return None


def _apply_corpus(page: str, key: str, values: tuple[str, ...]) -> str | None:
    """``corpus=<name>``: a corpus this server lists, picked as the Train page's corpus."""
    name, problem = corpus_dirs.from_link(values[-1])
    if name is None:
        return f"The link's corpus {shown(values[-1][:_MAX_WORD_CHARS])} {problem}."
    state.set_value(keys.TRAIN_SOURCE, train_form.SERVER)
    state.set_value(key, name)
    return None


# ---------------------------------------------------------------------------------------------
# Session -> link: each parameter's value, default and URL form


#: What a fresh session shows when a parameter is absent (the address bar leaves these out).
DEFAULT_TOKENIZER = "GPT-2 (gpt2)"
DEFAULT_COMPARE = ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)", "Word-level baseline",
                   "Char-level baseline"]
DEFAULT_EVALUATE = ["GPT-2 (gpt2)", "GPT-4 (cl100k_base)"]



def _tok_value(key: str) -> str | list[str]:
    return list(state.value(key) or []) if key in _MULTI_TOK else state.current_label()


def _tok_default(key: str) -> str | list[str]:
    if key == keys.EVA_TOKENIZERS:
        return DEFAULT_EVALUATE
    return DEFAULT_COMPARE if key == keys.CMP_TOKENIZERS else DEFAULT_TOKENIZER


def _model_name(label: str) -> str | None:
    """What ``model=`` says for a Hub model's or a local model's label, else None."""
    return hub_models.hub_repo(label) or local_models.link_value(label)


def _format_tok(value: str | list[str]) -> tuple[str | list[str] | None, list[str]]:
    labels = value if isinstance(value, list) else [value]
    labels = [label for label in labels if _model_name(label) is None]  # they travel as model=
    names = [link_name(label) for label in labels]
    notes = [unsaved_note(label) for label, name in zip(labels, names) if name is None]
    found = [n for n in names if n is not None]
    return (found if isinstance(value, list) else (found[0] if found else None)), notes


def _model_value(key: str) -> str | list[str] | None:
    if key == keys.CMP_TOKENIZERS:
        return [r for r in map(_model_name, state.value(key) or []) if r is not None]
    return _model_name(state.current_label())


def _format_text(value: str) -> tuple[str | None, list[str]]:
    url_value, problem = text_for_link(value)
    return url_value, [problem[0].upper() + problem[1:] + "."] if problem else []


def _plain(convert: Callable[[Any], str]) -> Callable[[Any], tuple[str, list[str]]]:
    return lambda value: (convert(value), [])


# ---------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class UrlParam:
    """One URL parameter, everything about it in one row of :data:`PARAMS`.

    ``keys`` maps each page that uses the parameter to the session value it fills; ``apply``
    checks a link's values into that session value (a note when it cannot); ``value`` and
    ``default`` give the session's current value and what a fresh session shows; ``format``
    turns the value into the URL's (plus notes on what a link cannot carry). A value equal
    to its default is left out of the address bar, and also out of the copied link unless
    ``in_full_link``.
    """

    name: str
    keys: dict[str, str]
    apply: Applier
    value: Callable[[str], Any]
    default: Callable[[str], Any]
    format: Callable[[Any], tuple[str | list[str] | None, list[str]]] = _plain(str)
    in_full_link: bool = True


#: Every URL parameter, in the order they are read (``tok`` first: later checks, such as the
#: word or the token ID, are made against its tokenizer) and written.
PARAMS: tuple[UrlParam, ...] = (
    UrlParam("tok", {"Tokenize": keys.ACTIVE, "Decode": keys.ACTIVE, "Vocabulary": keys.ACTIVE,
                     "Compare": keys.CMP_TOKENIZERS, "Replay": keys.ACTIVE,
                     "Evaluate": keys.EVA_TOKENIZERS},
             _apply_tok, _tok_value, _tok_default, _format_tok),
    UrlParam("model", {"Tokenize": keys.ACTIVE, "Decode": keys.ACTIVE,
                       "Vocabulary": keys.ACTIVE, "Compare": keys.CMP_TOKENIZERS,
                       "Replay": keys.ACTIVE},
             _apply_model, _model_value,
             lambda key: [] if key == keys.CMP_TOKENIZERS else None, _plain(lambda v: v)),
    UrlParam("text", {"Tokenize": keys.TOK_TEXT, "Compare": keys.CMP_TEXT,
                      "Replay": keys.REP_TEXT, "Evaluate": keys.EVA_TEXT}, _apply_text,
             lambda key: state.SAMPLE_TEXT if state.value(key) is None else state.value(key),
             lambda key: state.SAMPLE_TEXT, _format_text),
    UrlParam("ids", {"Decode": keys.DEC_IDS}, _apply_ids, state.value,
             lambda key: state.value(keys.DEC_IDS_DEFAULT), _format_text),
    UrlParam("word", {"Tokenize": keys.TOK_WORD}, _apply_word, lambda key: state.value(key) or None,
             lambda key: state.value(keys.TOK_WORD_DEFAULT)),
    UrlParam("show_ids", {"Tokenize": keys.TOK_SHOW_IDS}, _flag("IDs inline"),
             lambda key: state.value(key, True), lambda key: True,
             _plain(lambda v: "1" if v else "0"), in_full_link=False),
    UrlParam("gpt2", {"Tokenize": keys.TOK_GPT2_VIEW}, _flag("file spelling (GPT-2 byte view)"),
             lambda key: state.value(key, False), lambda key: False,
             _plain(lambda v: "1" if v else "0"), in_full_link=False),
    UrlParam("special", {"Tokenize": keys.TOK_ADD_SPECIAL}, _flag("model's special tokens"),
             lambda key: state.value(key, False), lambda key: False,
             _plain(lambda v: "1" if v else "0")),
    UrlParam("q", {"Vocabulary": keys.VOC_SEARCH}, _apply_query,
             lambda key: state.value(key) or "", lambda key: "", in_full_link=False),
    UrlParam("tab", {"Tokenize": keys.TOK_TAB}, _apply_tab,
             lambda key: _tab_name(state.value(key)), lambda key: "pre", in_full_link=False),
    UrlParam("order", {"Vocabulary": keys.VOC_ORDER}, _apply_order,
             lambda key: state.value(key, "ID"), lambda key: "ID", in_full_link=False),
    UrlParam("token", {"Vocabulary": keys.VOC_TOKEN}, _apply_token, state.value,
             lambda key: state.value(keys.VOC_TOKEN_DEFAULT), _plain(lambda v: str(int(v)))),
    UrlParam("k", {"Replay": keys.REP_STEP}, _apply_step, state.value, lambda key: 0,
             _plain(lambda v: str(int(v)))),
    UrlParam("mode", {"Tokenize": keys.TOK_MODE}, _apply_mode,
             lambda key: state.value(key) or "Text", lambda key: "Text", _plain(str.lower),
             in_full_link=False),  # a chat view names its mode; plain text is the default
    UrlParam("chat", {"Tokenize": keys.TOK_CHAT}, _apply_chat,
             lambda key: state.value(key) or DEFAULT_CONVERSATION,
             lambda key: DEFAULT_CONVERSATION, lambda v: _format_text(conversation_text(v)),
             in_full_link=False),
    UrlParam("gen", {"Tokenize": keys.TOK_CHAT_GEN}, _flag("generation prompt"),
             lambda key: state.value(key, True), lambda key: True,
             _plain(lambda v: "1" if v else "0"), in_full_link=False),
    UrlParam("tpl", {"Tokenize": keys.TOK_CHAT_TEMPLATE}, _apply_template_name,
             lambda key: state.value(key) or "", lambda key: "", in_full_link=False),
    UrlParam("src", {"Evaluate": keys.EVA_SOURCES}, _apply_sources,
             lambda key: list(state.value(key) or []), lambda key: DEFAULT_SOURCES,
             lambda value: (list(value), [])),
    UrlParam("focus", {"Evaluate": keys.EVA_FOCUS}, _apply_focus,
             lambda key: state.value(key) or "0.0", lambda key: "0.0", in_full_link=False),
    UrlParam("corpus", {"Train": keys.TRAIN_SERVER_CORPUS}, _apply_corpus,
             lambda key: (state.value(key) or None)
             if state.value(keys.TRAIN_SOURCE) == train_form.SERVER else None,
             lambda key: None),
)

#: Parameters each page reads and writes (from :data:`PARAMS`).
PAGE_PARAMS: dict[str, tuple[str, ...]] = {
    page: tuple(p.name for p in PARAMS if page in p.keys)
    for page in ("Tokenize", "Decode", "Vocabulary", "Compare", "Replay", "Evaluate", "Train")
}


def params_of(page: str) -> list[UrlParam]:
    """The rows of :data:`PARAMS` that ``page`` reads and writes, in their order."""
    return [p for p in PARAMS if page in p.keys]
