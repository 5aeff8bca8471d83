"""The Train page's corpus: the built-in one, uploaded files, a corpus on the server, or a
Hugging Face dataset file.

:func:`corpus_section` draws the choice and returns what a training reads: texts (the
built-in corpus, uploads: at most ``TOKPLAY_MAX_UPLOAD_MB``, held in memory), or a
``training.inputs.CorpusSource`` for files read where they lie, of any size (a server corpus,
``ui.corpus_dirs``; a Hugging Face dataset file, downloaded by the training worker into the
server's Hugging Face cache). Each problem is one line.

>>> hub_address("roneneldan/TinyStories", "TinyStoriesV2-GPT4-valid.txt")
'hf://datasets/roneneldan/TinyStories/TinyStoriesV2-GPT4-valid.txt'
>>> hub_address("https://huggingface.co/datasets/org/name/", "data/*.parquet")
'hf://datasets/org/name/data/*.parquet'
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.errors import HubError
from core.train.builtin_corpus import BUILTIN_CORPUS_NAME, BUILTIN_SEPARATOR, builtin_corpus_text
from core.train.corpus import blank_corpus_problem
from core.train.corpus_readers import file_kind
from core.train.hub_datasets import HUB_PREFIX, parse_hub_url
from training.inputs import CorpusSource
from ui import corpus_dirs, display, keys, limits, runtime, state, train_form, workspace
from ui.widgets import file_uploader

__all__ = ["Corpus", "builtin_corpus", "corpus_section", "hub_address"]

#: What a training reads (texts or files where they lie) and the name the page gives it.
Corpus = tuple[list[str] | CorpusSource, str]

_UPLOAD_PROBLEMS = "train.upload_problems"  # (uploader digest, messages about files left out)
_HUB_PAGE_PREFIXES = ("https://huggingface.co/datasets/", "http://huggingface.co/datasets/",
                      "huggingface.co/datasets/", "datasets/")


@st.cache_data(max_entries=1, show_spinner="Assembling the built-in corpus…")
def builtin_corpus() -> str:
    return builtin_corpus_text()


def corpus_section() -> Corpus | None:
    """The corpus the user chose, or None after saying what is missing."""
    offered = train_form.sources(server=corpus_dirs.listing_on(),
                                 hub=not runtime.training_in_page())
    if state.value(keys.TRAIN_SOURCE) not in offered:  # a snapshot from another server
        state.set_value(keys.TRAIN_SOURCE, train_form.DEFAULTS[keys.TRAIN_SOURCE])
    source = st.radio("Corpus", offered, horizontal=True,
                      **state.bind(keys.TRAIN_SOURCE, train_form.DEFAULTS[keys.TRAIN_SOURCE]))
    if source == train_form.SERVER:
        return server_corpus()
    if source == train_form.HUB:
        return hub_corpus()
    if source == train_form.BUILTIN:
        text = builtin_corpus()
        st.caption(
            f"**{BUILTIN_CORPUS_NAME}**: {limits.format_bytes(len(text.encode()))}, the docstrings "
            f"of {text.count(BUILTIN_SEPARATOR) + 1} standard-library modules joined with "
            "`<|endoftext|>`. "
            "Needs no download."
        )
        return [text], "built-in corpus"
    return uploaded_corpus()


# ---------------------------------------------------------------------------------------------
# Files read where they lie


def server_corpus() -> Corpus | None:
    """A corpus file in the folders the server lists (``TOKPLAY_CORPUS_DIRS``), by name."""
    listed = corpus_dirs.corpora()
    if not listed:
        st.info("The folders this server lists (TOKPLAY_CORPUS_DIRS) hold no corpus files "
                "(.txt, .gz, .zst, .parquet).", icon="📂")
        return None
    if state.value(keys.TRAIN_SERVER_CORPUS) not in listed:
        state.set_value(keys.TRAIN_SERVER_CORPUS, next(iter(listed)))
    name = st.selectbox(
        "Corpus on this server", list(listed),
        format_func=lambda n: f"{n} · {limits.format_bytes(listed[n].size)}",
        help="Files in the folders whoever runs this server shares (TOKPLAY_CORPUS_DIRS), of "
             "any size: the training reads the file where it lies, nothing is uploaded.",
        **state.bind(keys.TRAIN_SERVER_CORPUS))
    column = text_column() if file_kind(name) == "parquet" else "text"
    if problem := corpus_dirs.problem(name, column):
        st.error(display.message(problem), icon="⚠️")
        return None
    st.caption(f"{limits.format_bytes(listed[name].size)}, read where it lies on this server: "
               "nothing is uploaded or copied. Counting shows how far the training got.")
    return corpus_dirs.corpus_source(name, column), name


def hub_address(dataset: str, file: str = "") -> str:
    """The ``hf://datasets/...`` address of what the two boxes name: an address itself (a
    file ``file`` inside it), or ``ORG/NAME`` (its Hub page's address too) and a file, a
    folder or a glob in it. A one-line ``HubError`` when it names none."""
    dataset, file = dataset.strip(), file.strip().strip("/")
    for prefix in _HUB_PAGE_PREFIXES:
        if dataset.startswith(prefix):
            dataset = dataset[len(prefix):]
            break
    if not dataset.startswith(HUB_PREFIX):
        if not file:
            raise HubError(f"Name the file of {dataset!r} to train on (the File box: "
                           "train.txt, data/*.parquet…), or give its whole address "
                           "hf://datasets/ORG/NAME/PATH.")
        dataset = f"{HUB_PREFIX}datasets/{dataset.strip('/')}"
    url = dataset.rstrip("/") + (f"/{file}" if file else "")
    parse_hub_url(url)  # a malformed address is refused here, in one line
    return url


def hub_corpus() -> Corpus | None:
    """A Hugging Face dataset's file(s), fetched by the training worker into the server's
    Hugging Face cache (once: a second training reads the cached copy)."""
    left, right = st.columns(2)
    dataset = left.text_input(
        "Dataset", placeholder="ORG/NAME or hf://datasets/ORG/NAME/PATH",
        help="A dataset on the Hugging Face Hub: its ID (roneneldan/TinyStories), or the "
             "address of its files (hf://datasets/ORG/NAME/PATH).",
        **state.bind(keys.TRAIN_HF_DATASET, ""))
    file = right.text_input(
        "File", placeholder="TinyStoriesV2-GPT4-valid.txt",
        help="Its path in the dataset (as on its Files page); a folder or a glob "
             "(data/*.parquet) takes their .txt, .gz, .zst and .parquet files.",
        **state.bind(keys.TRAIN_HF_FILE, ""))
    column = text_column()
    if not dataset.strip():
        st.info("Name a dataset on the Hugging Face Hub and a file in it (.txt, .gz, .zst "
                "or .parquet).", icon="🤗")
        return None
    try:
        url = hub_address(dataset, file)
    except HubError as err:
        st.error(display.message(str(err)), icon="⚠️")  # (it quotes what was typed)
        return None
    st.caption("Downloaded into this server's Hugging Face cache when the training starts "
               "(the progress shows below), once: later trainings read the cached copy.")
    return CorpusSource((url,), column), url[len(HUB_PREFIX + "datasets/"):]


def text_column() -> str:
    """The Parquet column that holds the text (a box; "text" when left empty)."""
    column = st.text_input("Text column (Parquet)", max_chars=200,
                           help="Parquet files are read one document per row, from this column.",
                           **state.bind(keys.TRAIN_TEXT_COLUMN, "text"))
    return column.strip() or "text"


# ---------------------------------------------------------------------------------------------
# Uploads


def uploaded_corpus() -> Corpus | None:
    """Uploaded text files, kept for the session until replaced (``ui.workspace``)."""
    limit = limits.max_upload_bytes()
    kept = state.value(keys.TRAIN_CORPUS)
    bigger = (" A bigger corpus: pick a Hugging Face dataset file"
              + (" or a server corpus." if corpus_dirs.listing_on() else ".")
              if not runtime.training_in_page() else "")
    # subtle: no type= filter. Text comes as .txt, .md, .py, .csv, .jsonl or no extension at
    # all; Streamlit's filter refused those with a bare "files are not allowed". The content
    # decides instead (limits.decode_upload names the file and the bad byte).
    uploads = file_uploader(
        "Replace it with other text files" if kept else "Text files (UTF-8: .txt, .md, code…)",
        key="train.uploads",  # its drop zone states our limit (in total)
        help=f"One or more plain-text files in UTF-8, any extension, at most "
             f"{limits.format_bytes(limit)} in total (TOKPLAY_MAX_UPLOAD_MB). They stay here "
             f"until you upload others, across pages and reloads.{bigger}",
    )
    if uploads:
        digest = repr([(u.name, u.size, u.file_id) for u in uploads])
        if kept is None or kept.get("upload") != digest:
            kept = read_uploads(uploads, digest) or kept
        elif st.session_state.get(_UPLOAD_PROBLEMS, (None,))[0] == digest:
            for problem in st.session_state[_UPLOAD_PROBLEMS][1]:  # the files left out
                st.error(display.message(problem), icon="⚠️")
    if kept is None:
        st.info("Upload one or more text files, or pick the built-in corpus.", icon="📄")
        return None
    sizes = ", ".join(f"{display.code_span(name)} · {limits.format_bytes(size)}"
                      for name, size in kept["files"])
    row = st.container(horizontal=True, vertical_alignment="center")
    row.markdown(f"📄 Your corpus: {sizes}")
    if row.button("Forget it", key="train.forget_corpus", icon="🗑️",
                  help="Drop the uploaded text from this session."):
        st.session_state.pop(keys.TRAIN_CORPUS, None)
        st.rerun()
    return list(kept["texts"]), kept["name"]


def read_uploads(uploads: list[Any], digest: str) -> dict[str, Any] | None:
    """Check and decode newly uploaded corpus files; keep the good ones as the session's
    corpus (``ui.workspace.remember_corpus``). None (after saying why) if none is usable."""
    texts: list[str] = []
    names: list[str] = []
    problems: list[str] = []  # shown while these files stay in the uploader
    total = 0
    for upload in uploads:
        if too_large := limits.corpus_file_too_large(upload.name, upload.size, before=total):
            problems.append(too_large)
            continue
        data = upload.getvalue()
        try:
            texts.append(limits.decode_upload(upload.name, data))
        except Exception as err:  # noqa: BLE001 - CorpusError: shown, the other files still count
            problems.append(str(err))
            continue
        names.append(upload.name)
        total += len(data)
    st.session_state[_UPLOAD_PROBLEMS] = (digest, problems)
    for problem in problems:
        st.error(display.message(problem), icon="⚠️")
    if not texts:
        st.warning("None of the uploaded files can be used: fix them or use the built-in corpus.")
        return None
    if blank := blank_corpus_problem(texts):  # the command line refuses it the same way
        st.warning(display.message(blank))
        return None
    name = names[0] if len(names) == 1 else f"{len(names)} files"
    corpus = workspace.remember_corpus(name, list(zip(names, texts)))
    corpus["upload"] = digest
    return corpus
