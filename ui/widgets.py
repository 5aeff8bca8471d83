"""Widgets shared by pages: the tokenizer picker, the tokenizer-file loader, the sidebar block,
and error display. Each one reads and writes only ``st.session_state`` (via ``ui.state``)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any, cast

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.engine.tokenizer import Tokenizer
from core.errors import PatternNeededError, PlaygroundError
from core.formats.detect import export_all, files_to_open
from core.interface import TokenizerInterface
from ui import (
    cache,
    copy_line,
    display,
    html_block,
    limits,
    model_picker,
    page_menu,
    runtime,
    site,
    state,
    workspace,
)
from ui.live_input import key_class
from ui.training import sidebar_status

#: Pre-tokenizer choices for files that store none ("custom" opens a regex box).
PATTERN_CHOICES = ["from the files", "gpt2", "cl100k", "o200k", "llama3", "tekken", "custom regex"]



def later(data: bytes) -> Callable[[], bytes]:
    """``data`` behind a call: a download button given it sends the bytes only on a click.

    >>> later(b"ab")()
    b'ab'
    """
    return lambda: data

def copy_row(label: str, text: str, *, key: str, help: str | None = None) -> None:
    """``label`` and ``text`` on one line, with a copy button (:mod:`ui.copy_line`): one
    click copies the text (a link, token IDs). One element where ``st.html`` runs the
    button's script (a rerun pays per element), else a caption and ``st.code``."""
    if runtime.html_runs_scripts():
        copy_line.show_row(label, text, key=key, help=help)
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key=key):
        st.caption(label, help=help, width="content")
        copy_line.show(text)


def show_error(err: BaseException, *, what: str = "") -> None:
    """Show an error the user can act on, never a traceback.

    ``core.PlaygroundError`` messages already say what to do; anything else becomes a short
    message naming the error.
    """
    prefix = f"{what}: " if what else ""
    if isinstance(err, PlaygroundError):
        st.error(f"{prefix}{display.message(str(err))}", icon="⚠️")
    elif isinstance(err, KeyError):
        st.warning(f"{prefix}{display.message(str(err.args[0] if err.args else err))}", icon="⚠️")
    else:
        st.error(f"{prefix}something went wrong ({display.escaped(f'{type(err).__name__}: {err}')}). "
                 "Try another input or tokenizer.", icon="⚠️")


def use_builtin_tokenizer() -> str:
    """Train (once per server; cached) a small byte-level BPE on the built-in corpus, add it to
    this session and make it active; return its label. Needs no file and no network."""
    tok = cache.builtin_tokenizer(cache.QUICK_VOCAB)
    rows = cache.builtin_training(cache.QUICK_VOCAB)[2]  # Replay charts this training
    label = state.register_tokenizer(
        f"built-in corpus · {len(tok.vocab):,} tokens", tok,
        source=f"byte-level BPE trained on the built-in corpus (Python docstrings), "
               f"{len(tok.merges):,} merges", meta={"rows": rows})
    workspace.remember_builtin(label, cache.QUICK_VOCAB)
    state.set_active(label)
    return label


def load_tokenizer(label: str | None, *,
                   fallback: bool = True) -> tuple[str, TokenizerInterface] | None:
    """``(label, tokenizer)`` for ``label``, so a page never opens on an error.

    When it cannot be loaded, one line says why; with ``fallback`` the page goes on with the
    built-in-corpus tokenizer (returned with its own label), else ``None`` is returned.
    """
    if label is None:
        st.info("Choose a tokenizer first.")
        return None
    try:
        return label, state.get_tokenizer(label)
    except Exception as err:  # noqa: BLE001 - every failure becomes a message, not a traceback
        reason = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        reason = display.escaped(reason)  # it may name a file, a Hub model, a link's value
        if not fallback:
            st.warning(f"“{display.escaped(label)}” is left out: {reason}", icon="⚠️")
            return None
    try:
        new_label = use_builtin_tokenizer()
    except Exception as err:  # noqa: BLE001 - nothing left to fall back to
        show_error(err, what=f"Cannot load “{display.escaped(label)}”")
        return None
    st.warning(f"“{display.escaped(label)}” cannot be loaded ({reason}), so this page shows "
               f"“{display.escaped(new_label)}”. "
               "Pick another tokenizer above, or load files under 📂 Load tokenizer files in "
               "the sidebar.", icon="⚠️")
    return new_label, state.get_tokenizer(new_label)


def tokenizer_picker(key: str, *, label: str = "Tokenizer", help: str | None = None) -> str:
    """A select box over every available tokenizer, following (and setting) the session's
    active one. Returns the chosen label. A choice that cannot load (a Hub model while the
    server is offline, a GGUF file gone) is not made: the tokenizer in use stays, and one
    line under the box says why (``ui.model_picker.choose``)."""
    options = state.available_tokenizers()  # listed once for this picker
    st.session_state[key] = state.current_label(options)
    chosen = st.selectbox(
        label, options, key=key, on_change=model_picker.choose, args=(key,),
        help=help or "Your trained and uploaded tokenizers, OpenAI's presets, and two baselines.",
    )
    model_picker.show_problem(key)
    if state.active_label(options) is None:
        state.set_active(chosen)
    return chosen


def tokenizer_multi_picker(key: str, *, label: str = "Tokenizers", max_selections: int = 4,
                           default: list[str] | None = None) -> list[str]:
    """A multiselect of up to ``max_selections`` tokenizers, remembered across pages.

    ``default`` is used only while nothing is remembered: an empty pick ("Clear all") is the
    user's choice and stays empty."""
    options = state.available_tokenizers()
    stored = state.value(key)
    # subtle: `stored or default` would treat the user's empty pick as "never picked"
    remembered = [x for x in ((default or []) if stored is None else stored) if x in options]
    kwargs = state.bind(key, remembered)
    st.session_state[kwargs["key"]] = remembered
    return st.multiselect(label, options, max_selections=max_selections, **kwargs)


def upload_size_cap_mb() -> int:
    """``max_upload_size`` for every file uploader: ``limits.upload_transport_mb()`` (twice
    the upload limit, so a file that is too large still reaches the page, which says why it
    is refused), never above the server's own cap (``server.maxUploadSize``)."""
    return min(limits.upload_transport_mb(), int(st.get_option("server.maxUploadSize")))


#: What Streamlit prints in a drop zone ("100MB per file": its max_upload_size, not our limit).
_DROP_ZONE_NOTE = '[data-testid="stFileUploaderDropzoneInstructions"] span'


def file_uploader(label: str, *, key: str, per_file: bool = False, **options: Any) -> Any:
    """``st.file_uploader`` of many files whose drop zone states this server's limit
    (``limits.upload_limit_note``: in total, or ``per_file``); ``options`` go to Streamlit.

    subtle: the browser may send a file up to :func:`upload_size_cap_mb`, twice the limit,
    so a file too large still reaches the page, which says why it is refused in our words;
    Streamlit prints that cap in the drop zone and has no option to change the line. A CSS
    rule scoped to this uploader (its ``st-key-`` class) shows our limit there instead, in
    Streamlit's own font and colour.
    """
    note = limits.upload_limit_note(per_file=per_file)
    note = note.replace("\\", "\\\\").replace('"', '\\"')  # a CSS string (our text, quoted anyway)
    zone = f".{key_class(key)} {_DROP_ZONE_NOTE}"
    html_block.draw(f'<style>{zone} {{ font-size: 0; }} '
            f'{zone}::after {{ content: "{note}"; font-size: 0.875rem; }}</style>')
    return st.file_uploader(label, key=key, accept_multiple_files=True,
                            max_upload_size=upload_size_cap_mb(), **options)


def tokenizer_uploader(key: str, *, label: str = "Tokenizer files") -> str | None:
    """Upload tokenizer files and load them through core's safe loaders.

    Accepts the CS336 pickles (``vocab.pkl`` + ``merges.pkl``), GPT-2's ``encoder.json`` +
    ``vocab.bpe``, a rank file (``.tiktoken``, Meta's Llama 3/4 ``tokenizer.model``), a
    Hugging Face ``tokenizer.json``, a SentencePiece ``.model``, a Mistral Tekken json or a
    GGUF file (llama.cpp, Ollama, LM Studio; a vocab-only one is a few MB). A good upload
    is registered in the session and made active; its label is returned (once,
    on the run that loaded it). Files added beside an earlier upload open alone when they
    make a tokenizer (:func:`_files_to_open`). Bad files show the loader's message.
    """
    # subtle: no type= filter. Tokenizer files come as .bin, hash names or no extension;
    # Streamlit's filter refused those with a red icon and words on hover only. The content
    # decides instead (core.formats says in one line what it cannot read).
    uploads = file_uploader(  # its drop zone states our limit (in total)
        label, key=key,
        help="vocab.pkl + merges.pkl · encoder.json + vocab.bpe · *.tiktoken or Llama 3/4 "
             "tokenizer.model · tokenizer.json (BPE, WordPiece) · SentencePiece .model · "
             "Mistral tekken.json · a GGUF file (a vocab-only one, as llama.cpp's "
             "ggml-vocab-*.gguf). Any file name: the content decides. A tokenizer added "
             "here later replaces the one loaded before. With tokenizer.json, add "
             "tokenizer_config.json or chat_template.jinja for its chat template (Tokenize's "
             "Chat mode). Pickles are read with a restricted loader that never runs "
             f"code. At most {limits.format_bytes(limits.max_upload_bytes())} in total "
             "(TOKPLAY_MAX_UPLOAD_MB).",
    )
    specials_raw = st.text_input(
        "Special tokens", key=key + ".specials", placeholder="<|endoftext|>",
        help="Comma-separated. Leave empty to use what the files say (pickles and unknown "
             ".tiktoken files name none).")
    pattern = st.selectbox(
        "Pre-tokenizer pattern", PATTERN_CHOICES, key=key + ".pattern",
        help="Known files (Llama 3/4, OpenAI's, Tekken, tokenizer.json) carry or imply their "
             "own. Pickles and GPT-2 files default to GPT-2's. A rank file we do not know "
             "needs one: a wrong pattern gives wrong IDs.")
    if pattern == "custom regex":
        pattern = st.text_input(
            "Your regex", key=key + ".regex", placeholder=r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+",
            help="Python `regex` syntax (\\p{L} and friends); each match is one pre-token."
        ).strip() or "from the files"
    if not uploads:
        return None
    too_large = limits.upload_too_large(sum(u.size for u in uploads))
    if too_large:  # checked before the bytes are copied out of the uploader
        st.error(too_large, icon="⚠️")
        return None
    files, held = _files_to_open(key, uploads)
    specials = [t.strip() for t in specials_raw.split(",") if t.strip()] or None
    chosen = None if pattern == "from the files" else pattern
    digest = cache.content_hash(files) + repr([("pattern", chosen), ("special_tokens", specials)])
    done_key = key + ".loaded"
    if st.session_state.get(done_key, (None, None))[0] == digest:
        _loaded_from(key, held, files)  # (a file taken away: the rest is what is open)
        return None  # already loaded on an earlier run; keep the user's later choices
    try:
        tok = cache.load_files(files, special_tokens=specials, pattern=chosen)
    except Exception as err:  # noqa: BLE001 - shown to the user
        if isinstance(err, PatternNeededError):
            st.warning(f"{display.message(str(err))} Pick it under **Pre-tokenizer pattern** "
                       "above.", icon="✂️")  # (it names the file)
            return None
        show_error(err, what="Could not load these files")
        return None
    name = tok.name or " + ".join(sorted(files))
    new_label = state.register_tokenizer(name, tok, source="uploaded " + ", ".join(sorted(files)))
    workspace.remember_files(new_label, files, special_tokens=specials, pattern=chosen)
    state.set_active(new_label)
    st.session_state[done_key] = (digest, new_label)
    _loaded_from(key, held, files)
    st.toast(f"Loaded “{display.escaped(new_label)}”", icon="✅")
    return new_label


def _files_to_open(
    key: str, uploads: list[Any]
) -> tuple[dict[str, bytes], frozenset[tuple[str, str]]]:
    """The uploader's files to open, and what it holds (``(name, content digest)`` pairs).

    Files added since the last load open alone when they make a tokenizer, so a second
    GGUF replaces the first; else every file does, so ``merges.pkl`` completes ``vocab.pkl``
    (:func:`core.formats.detect.files_to_open`). A file picked again (same name and bytes)
    is not new. ``key + ".held"`` is what the uploader held at the last load;
    ``key + ".choice"`` keeps the choice, made once per change.
    """
    files = {u.name: u.getvalue() for u in uploads}
    held = frozenset((name, cache.content_hash({"": data})) for name, data in files.items())
    before = st.session_state.get(key + ".held", frozenset())
    choice = st.session_state.get(key + ".choice")
    if choice is None or choice[0] != (held, before):
        added = {name for name, _ in held - before}
        choice = ((held, before), sorted(files_to_open(files, added)))
        st.session_state[key + ".choice"] = choice
    return {name: files[name] for name in choice[1] if name in files}, held


def _loaded_from(key: str, held: frozenset[tuple[str, str]], files: dict[str, bytes]) -> None:
    """Remember that the uploader held ``held`` when ``files`` (some of them) were opened:
    files added later count from here."""
    st.session_state[key + ".held"] = held
    st.session_state[key + ".choice"] = ((held, held), sorted(files))


def _page_menu(page: str) -> None:
    """The menu (Streamlit's own is hidden: it would call the home page "app"): one HTML
    element (:mod:`ui.page_menu`) where ``st.html`` runs its script, else page links."""
    if runtime.html_runs_scripts() and not runtime.in_browser():
        html_block.draw(page_menu.html_menu(page), unsafe_allow_javascript=True)
        return
    with st.container(key="ui-nav"):
        try:
            for each in site.PAGES:
                st.page_link(each.script, label=each.title, icon=each.icon)
        except (StreamlitAPIException, KeyError):
            pass  # subtle: AppTest runs one page script alone, with no app.py to link to
            # (Streamlit 1.62, as in the static build, raises KeyError there instead)


def sidebar(page: str = "") -> None:
    """The shared sidebar block: the page menu, a running training (``ui.training``), the
    active tokenizer, the file loader and the Hugging Face model box (``ui.model_picker``)."""
    with st.sidebar:
        _page_menu(page)
        sidebar_status(page)
        st.divider()
        info = st.container()
        # lazy: the loader's widgets are built only while it is open (st.expander's .open),
        # so a rerun of a page with the loader closed does not pay for them
        loader = st.expander("Load tokenizer files", icon="📂", key="ui.loader",
                             on_change="rerun")
        if loader.open:
            with loader:
                tokenizer_uploader("ui.sidebar_upload")
        model_picker.sidebar_block()  # any Hugging Face model by its ID, and the cached ones
    with info:  # filled after the loader, so a file loaded on this run shows at once
        active = state.current_label()  # what the pages use, chosen or not
        own = state.session_tokenizers().get(active)
        size = f" · {own['tok'].n_vocab:,} tokens" if own is not None else ""
        html_block.draw(active_html(active, state.describe(active) + size))
        if own is not None and own["tok"].capabilities.save and runtime.keeps_work():
            if state.saved_id(active) is None:
                with st.expander("Save to library", icon="📚"):
                    save_to_library(active, key="ui.sidebar_save")
            else:
                st.caption(f"📚 saved as `lib:{state.saved_id(active)}`")


def active_html(label: str, note: str) -> str:
    """The sidebar's "Active tokenizer": its title, the label as code and a note, in one block
    (one element on every run instead of three). Both texts are the user's (file names):
    escaped.

    >>> block = active_html("a <b>", "uploaded x.pkl")
    >>> "<code>a &lt;b&gt;</code>" in block, '<div class="tp-active-note">uploaded x.pkl</div>' in block
    (True, True)
    """
    return (f'<div class="tp-active"><div class="tp-active-title">Active tokenizer</div>'
            f'<code>{html.escape(label)}</code><div class="tp-active-note">{html.escape(note)}'
            f'</div></div>{_ACTIVE_CSS}')


_ACTIVE_CSS = ("<style>.tp-active{font-size:.875rem}.tp-active-title{font-weight:600;"
               "font-size:1rem;margin-bottom:.4rem}.tp-active code{font-size:.85rem;"
               "overflow-wrap:anywhere}.tp-active-note{opacity:.65;"
               "margin-top:.4rem}</style>")


def save_to_library(label: str, *, key: str) -> str | None:
    """Name + "Save to library" button for one of this session's tokenizers.

    Saved tokenizers are shared by every session on the server and can be named in links.
    Returns the library ID once saved (on the run that saved it, or later ones).
    """
    own = state.session_tokenizers().get(label)
    if own is None:
        return state.saved_id(label)
    if not runtime.keeps_work():
        st.caption(runtime.NO_SERVER_NOTE)
        return None
    saved = state.saved_id(label)
    if saved is not None:
        st.success(f"Saved in the library as `lib:{saved}`: links to this view now name it.",
                   icon="📚")
        return saved
    tok = own["tok"]
    if not tok.capabilities.save:  # (a link's popover offers every unsaved tokenizer)
        st.caption(f"The library keeps a vocabulary, a merge list, special tokens and a "
                   f"pattern: not all of this {display.escaped(tok.kind)} tokenizer (its "
                   "model, ranks, template or settings). Share the file you loaded instead.")
        return None
    meta = own.get("meta") or {}
    name = st.text_input("Name", value=label, key=key + ".name", max_chars=200,
                         help="Shown in every teammate's tokenizer pickers.")
    pattern = display.escaped(tok.pattern) if len(tok.pattern) < 12 else "(custom regex)"
    details = [f"{len(tok.vocab):,} tokens", f"{len(tok.merges):,} merges", f"pattern {pattern}"]
    if tok.special_tokens:
        details.append("special " + ", ".join(map(display.code_span, tok.special_tokens)))
    if meta.get("corpus_name"):
        details.append(f"corpus {display.escaped(meta['corpus_name'])} "
                       f"({limits.format_bytes(int(meta.get('corpus_size', 0)))})")
    st.caption(" · ".join(details))
    if not st.button("Save to library", key=key + ".button", icon="📚",
                     help="Keep it on this server so teammates can open it from a link."):
        return None
    try:
        entry = cache.library().save(
            tok.vocab, tok.merges, name=name, special_tokens=list(tok.special_tokens or []),
            pattern=tok.pattern, corpus_name=str(meta.get("corpus_name", ""))[:200],
            corpus_size=int(meta.get("corpus_size", 0)))
    except Exception as err:  # noqa: BLE001 - LibraryError says what to fix
        show_error(err, what="Could not save to the library")
        return None
    cache.forget_library_entries()
    state.remember_saved(label, entry.id)
    st.toast(f"Saved “{display.escaped(entry.name)}” to the library", icon="📚")
    st.rerun()  # so links and pickers drawn earlier in this run include it
    return entry.id  # pragma: no cover - st.rerun() does not return


def export_buttons(tok: TokenizerInterface, *, key: str, cache_key: str | None = None) -> None:
    """Download buttons for every format core can write (``core.formats.export_all``), and one
    warning per format it could not write (which file is missing and why).

    ``cache_key`` names the tokenizer's content (``ui.state.tokenizer_key``) when the page
    has it; else its own fingerprint does (computed once per tokenizer)."""
    caps = tok.capabilities
    if not caps.details:
        st.info("Export is available for byte-level BPE tokenizers.")
        return
    if not caps.export:
        # (a kind may quote the file: "BPE (end-of-word suffix '</w>')")
        st.info(f"A {display.escaped(tok.kind)} tokenizer keeps its own file format: "
                "the file you loaded is the one to share.")
        return
    try:
        # (capabilities.export: a byte-level core.Tokenizer)
        files, failures = _export(cache_key or tok.fingerprint(), cast(Tokenizer, tok))
    except Exception as err:  # noqa: BLE001
        show_error(err, what="Cannot export")
        return
    st.caption("The CS336 pickles, GPT-2's encoder.json + vocab.bpe, a .tiktoken rank file "
               "and a Hugging Face tokenizer.json: each loads back in the sidebar.")
    show_export_failures(failures, others=bool(files))
    if not files:
        return
    cols = st.columns(min(4, max(1, len(files))))
    for k, (name, data) in enumerate(files.items()):
        # subtle: deferred (a callable), so a rerun neither hashes nor re-sends megabytes of
        # files nobody clicked (it was a third of a Tokenize rerun with GPT-2)
        cols[k % len(cols)].download_button(
            f"⬇️ {name}", data=later(data), file_name=name, key=f"{key}.{name}",
            mime="application/octet-stream", width="stretch", on_click="ignore")


def show_export_failures(failures: list[str], *, others: bool = True) -> None:
    """One warning per format that could not be written (``ExportFailure.message``: the file
    and the reason); ``others`` says whether other downloads are still offered."""
    after = " The other downloads are complete." if others else ""
    for message in failures:
        st.warning(f"{display.message(message.rstrip('.'))}.{after}", icon="⚠️")  # file names


@st.cache_resource(max_entries=8, ttl=3600, show_spinner="Writing files…")
def _export(fp: str, _tok: Tokenizer) -> tuple[dict[str, bytes], list[str]]:
    """The files, and one message per format left out. ``cache_resource``: the same immutable
    bytes for every session, not unpickled again on every rerun as ``cache_data`` would."""
    exported = export_all(_tok)
    return dict(exported), [f.message for f in exported.failures]
