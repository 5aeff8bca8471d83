"""Work that survives a reload or a link: the session's snapshot on the server, ``?ws=<ID>``.

Each page run ends its setup with :func:`save`: when the session's work changed (a tokenizer
trained or uploaded, another active tokenizer, a training started or finished, a corpus
uploaded), it writes a new immutable snapshot to :class:`core.services.workspace.WorkspaceStore` and
puts its ID in the address bar. :func:`restore` (before the page reads its link) opens the
snapshot a URL names in a fresh session: reloading a page, or opening a teammate's link,
brings back the same tokenizers, the active one, the last training (result, charts,
downloads; the live view too if it still runs in this server process) and the corpus.

What a snapshot holds, per tokenizer, is a *recipe* (blob IDs, never objects):

- ``{"kind": "trained", "blob": ID}``: the library's canonical JSON (vocab, merges, special
  tokens, pattern), rebuilt as ``core.Tokenizer``;
- ``{"kind": "files", "files": [[name, ID], ...], "special_tokens", "pattern"}``: the files as
  uploaded, loaded again through ``core.formats``' safe loaders (pickles included: the
  restricted unpickler, never code);
- ``{"kind": "builtin", "vocab_size": n}``: the built-in-corpus tokenizer, retrained (cached).

Bounds (README, "Keeping your work"): ``TOKPLAY_WORKSPACE_DAYS`` days after last use
(default 30) and ``TOKPLAY_WORKSPACE_MB`` in total (default 1,000), least recently used out
first. The store lives in the library folder (``<library>/workspaces``), so every server
process on the host shares it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from typing import Any

import streamlit as st

from core.engine.tokenizer import Tokenizer
from core.interface import TokenizerInterface
from core.services.library import tokenizer_from_json, tokenizer_json
from core.services.workspace import WorkspaceStore
from training.snapshot import TERMINAL, JobSnapshot
from ui import (
    cache,
    display,
    keys,
    limits,
    runtime,
    state,
    train_form,
    training as server_training,  # (tests swap its manager)
)

WS_PARAM = "ws"
FORMAT = "tokenizer-playground/workspace-v1"
_MAX_TOKENIZERS = 16  # per snapshot: the newest ones


@st.cache_resource(max_entries=4, show_spinner=False)
def _store_at(root: str, max_bytes: int, max_days: int) -> WorkspaceStore:
    return WorkspaceStore(root, max_bytes=max_bytes, max_age_days=max_days)


def store() -> WorkspaceStore:
    """The server's ``WorkspaceStore`` (``<library folder>/workspaces``); a clear error in
    the static build, which keeps nothing (``ui.runtime``)."""
    if not runtime.keeps_work():
        raise RuntimeError("the static version keeps no work for reloads and links")
    return _store_at(os.path.join(cache.library_root(), "workspaces"),
                     limits.workspace_max_bytes(), limits.workspace_max_days())


def _problem(err: BaseException) -> None:
    """Remember (once) why work cannot be kept; :func:`notes` shows it."""
    st.session_state[keys.WS_PROBLEM] = (
        f"Your work cannot be kept for reloads and links on this server "
        f"({display.escaped(str(err))}). Everything "
        "still works in this browser tab.")


# ---------------------------------------------------------------------------------------------
# Recipes: how each session tokenizer is rebuilt (written when it is registered)


def _recipes() -> dict[str, dict[str, Any]]:
    return st.session_state.setdefault(keys.WS_RECIPES, {})


def remember_files(label: str, files: dict[str, bytes], *, special_tokens: list[str] | None,
                   pattern: str | None) -> None:
    """Keep uploaded tokenizer files (as uploaded) so ``label`` survives a reload."""
    if not runtime.keeps_work():
        return
    try:
        ids = [[name, store().put(data)] for name, data in sorted(files.items())]
    except Exception as err:  # noqa: BLE001 - a full disk must not break loading
        _problem(err)
        return
    _recipes()[label] = {"kind": "files", "files": ids, "special_tokens": special_tokens,
                         "pattern": pattern}


def remember_builtin(label: str, vocab_size: int) -> None:
    """The built-in-corpus tokenizer is rebuilt from its size (training it is cached)."""
    _recipes()[label] = {"kind": "builtin", "vocab_size": int(vocab_size)}


def _rows_doc(rows: Any) -> list[list[Any]]:
    return [[r[0], r[1], r[2].hex(), r[3][0].hex(), r[3][1].hex(), r[4], r[5]]
            for r in rows]


def _rows_from_doc(doc: Any) -> tuple[Any, ...]:
    return tuple((int(r[0]), int(r[1]), bytes.fromhex(r[2]), (bytes.fromhex(r[3]),
                  bytes.fromhex(r[4])), int(r[5]), float(r[6])) for r in doc)


def remember_training(snap: JobSnapshot, label: str | None, tok: Tokenizer | None) -> None:
    """Keep a finished training: its tokenizer (``label``), its rows and its result."""
    rows_id = None  # the static build keeps only the record below (no store)
    if runtime.keeps_work():
        try:
            rows_id = store().put_json(_rows_doc(snap.rows)) if snap.rows else None
            if tok is not None and label is not None:
                blob = store().put(tokenizer_json(tok.vocab, tok.merges,
                                                  list(tok.special_tokens), tok.pattern))
                _recipes()[label] = {"kind": "trained", "blob": blob, "rows": rows_id}
        except Exception as err:  # noqa: BLE001
            _problem(err)
            return
    st.session_state[keys.TRAIN_RECORD] = {
        "job_id": snap.job_id, "label": label, "status": snap.status,
        "stop_reason": snap.stop_reason, "messages": list(snap.messages), "error": snap.error,
        "elapsed": round(snap.elapsed, 3), "vocab_size": snap.vocab_size,
        "special_tokens": list(snap.special_tokens), "pattern": snap.pattern,
        "corpus_name": snap.corpus_name, "corpus_bytes": snap.corpus_bytes,
        "corpus_stats": {k: v for k, v in snap.corpus_stats.items()
                         if isinstance(v, (int, float, str))},
        "rows": rows_id,
    }


def remember_corpus(name: str, files: list[tuple[str, str]]) -> dict[str, Any]:
    """Keep an uploaded corpus (file name, text) for this session and its snapshots; returns
    the session value (``keys.TRAIN_CORPUS``)."""
    corpus: dict[str, Any] = {"name": name, "files": [[n, len(t.encode())] for n, t in files],
                              "texts": [t for _, t in files], "blobs": None}
    if not runtime.keeps_work():
        st.session_state[keys.TRAIN_CORPUS] = corpus
        return corpus
    try:
        corpus["blobs"] = [store().put(t.encode("utf-8")) for _, t in files]
    except Exception as err:  # noqa: BLE001
        _problem(err)
    st.session_state[keys.TRAIN_CORPUS] = corpus
    return corpus


def record_snapshot(tok: Tokenizer | None) -> JobSnapshot | None:
    """The last finished training as a ``training.snapshot.JobSnapshot`` (for the Train page after a
    reload, when the job itself is no longer in this server process), or None. ``tok``: the
    ``core.Tokenizer`` it made, when the session still has it."""
    record = st.session_state.get(keys.TRAIN_RECORD)
    if not record:
        return None
    rows = state.training_rows(record["label"]) if record.get("label") else None
    if rows is None and record.get("rows"):
        try:
            rows = _rows_from_doc(store().get_json(record["rows"]))
        except Exception:  # noqa: BLE001 - expired: the result without its charts
            rows = ()
    return JobSnapshot(
        job_id=record["job_id"], status=record["status"], queue_position=None,
        vocab_size=record["vocab_size"], special_tokens=tuple(record["special_tokens"]),
        pattern=record["pattern"], corpus_name=record["corpus_name"],
        corpus_bytes=record["corpus_bytes"], rows=tuple(rows or ()), count_progress=None,
        vocab=None if tok is None else tok.vocab, merges=None if tok is None else tok.merges,
        stop_reason=record.get("stop_reason"), messages=tuple(record.get("messages") or ()),
        error=record.get("error"), corpus_stats=dict(record.get("corpus_stats") or {}),
        started_at=0.0, finished_at=float(record.get("elapsed") or 0.0),
    )


# ---------------------------------------------------------------------------------------------
# Session -> snapshot


def manifest() -> dict[str, Any] | None:
    """The session's work as a snapshot document, or None when there is nothing to keep."""
    recipes = _recipes()
    own = state.session_tokenizers()
    tokenizers = [
        {"label": label, "source": entry["source"], "recipe": recipes[label],
         "meta": {k: v for k, v in (entry.get("meta") or {}).items()
                  if k in ("corpus_name", "corpus_size")}}
        for label, entry in own.items() if label in recipes
    ][-_MAX_TOKENIZERS:]
    # subtle: every page run calls this (save()); a status, not a snapshot, which copies
    # every merge row of the job
    job_id = st.session_state.get(keys.TRAIN_JOB)
    running = job_id is not None and server_training.training_manager().status(job_id) not in (
        None, *TERMINAL)
    corpus = st.session_state.get(keys.TRAIN_CORPUS)
    doc: dict[str, Any] = {
        "tokenizers": tokenizers,
        "training": st.session_state.get(keys.TRAIN_RECORD),
        "train_job": job_id if running else None,
        "corpus": ({"name": corpus["name"], "files": corpus["files"], "blobs": corpus["blobs"]}
                   if corpus and corpus.get("blobs") else None),
        # the Train form as shown (its non-default settings): a reload must not reset it
        "train_form": train_form.form_doc(st.session_state),
    }
    if not any(doc.values()):
        return None
    doc["active"] = st.session_state.get(keys.ACTIVE)
    doc["format"] = FORMAT
    doc["salt"] = st.session_state.setdefault(keys.WS_SALT, secrets.token_hex(8))
    return doc


def _digest(doc: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def save() -> None:
    """Write the session's snapshot if it changed, and keep its ID in the address bar."""
    if not runtime.keeps_work():
        return
    doc = manifest()
    if doc is None:
        return
    digest = _digest(doc)
    if st.session_state.get(keys.WS_DIGEST) != digest:
        try:
            st.session_state[keys.WS_ID] = store().put_json(doc)
        except Exception as err:  # noqa: BLE001
            _problem(err)
            return
        st.session_state[keys.WS_DIGEST] = digest
    ws_id = st.session_state.get(keys.WS_ID)
    if ws_id and st.query_params.get(WS_PARAM) != ws_id:
        st.query_params[WS_PARAM] = ws_id


def current_id() -> str | None:
    """The ID links should carry (``ws=``), or None when the session keeps nothing."""
    return st.session_state.get(keys.WS_ID)


# ---------------------------------------------------------------------------------------------
# Snapshot -> session


@st.cache_resource(max_entries=16, show_spinner="Reopening your work…")
def _rebuild(recipe_json: str) -> TokenizerInterface:
    """A tokenizer from its recipe (cached: recipes name content, so sessions may share it)."""
    recipe = json.loads(recipe_json)
    kind = recipe.get("kind")
    if kind == "trained":
        vocab, merges, specials, pattern = tokenizer_from_json(store().get(recipe["blob"]))
        return Tokenizer(vocab, merges, specials or None, pattern=pattern)
    if kind == "files":
        files = {str(name): store().get(blob) for name, blob in recipe["files"]}
        return cache.load_files(files, special_tokens=recipe.get("special_tokens"),
                                pattern=recipe.get("pattern"))
    if kind == "builtin":
        return cache.builtin_tokenizer(int(recipe["vocab_size"]))
    raise ValueError(f"unknown recipe kind {kind!r}")


def restore() -> list[str]:
    """Open the snapshot the URL names (once per ID per session); returns notes for the page
    (what could not be brought back, and why)."""
    ws_id = st.query_params.get(WS_PARAM)
    if not ws_id or ws_id == st.session_state.get(keys.WS_ID):
        return []
    if not runtime.keeps_work():
        del st.query_params[WS_PARAM]
        return [f"The link's {display.code_span('ws=' + str(ws_id)[:20])} names work kept on a server. "
                + runtime.NO_SERVER_NOTE]
    seen: set[str] = st.session_state.setdefault(keys.WS_SEEN, set())
    if ws_id in seen:
        return []
    seen.add(ws_id)
    fresh = not state.session_tokenizers() and keys.WS_SALT not in st.session_state
    try:
        doc = store().get_json(ws_id)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError("not a workspace")
    except Exception as err:  # noqa: BLE001 - unknown, expired, damaged: say so, go on
        del st.query_params[WS_PARAM]
        return [(f"The work this link named ({display.code_span('ws=' + str(ws_id)[:20])}) "
                 "cannot be reopened: "
                 f"{display.escaped(str(err))} This page starts fresh.")]
    notes = _restore_tokenizers(doc.get("tokenizers") or [])
    _restore_training(doc)
    _restore_corpus(doc.get("corpus"), notes)
    if "train_form" in doc:  # older snapshots: the form as the last training had it
        train_form.apply_doc(doc["train_form"], st.session_state)
    active = doc.get("active")
    if isinstance(active, str) and active in state.available_tokenizers():
        state.set_active(active)
    if fresh and not notes:
        # the same session again (a reload): same salt, same snapshot, nothing to write
        st.session_state[keys.WS_SALT] = doc.get("salt") or secrets.token_hex(8)
        st.session_state[keys.WS_ID] = ws_id
        manifest_now = manifest()
        if manifest_now is not None:
            st.session_state[keys.WS_DIGEST] = _digest(manifest_now)
    return notes


def _restore_tokenizers(items: list[Any]) -> list[str]:
    notes: list[str] = []
    for item in items:
        try:
            label, recipe = str(item["label"]), dict(item["recipe"])
            tok = _rebuild(json.dumps(recipe, sort_keys=True))
        except Exception as err:  # noqa: BLE001
            notes.append(f"“{display.escaped(str(item.get('label', '?'))[:80])}” could not be "
                         f"reopened ({display.escaped(str(err))}).")  # it may name a file
            continue
        meta = dict(item.get("meta") or {})
        if recipe.get("kind") == "builtin":  # its training is rebuilt too (cached): Replay
            with contextlib.suppress(Exception):
                meta["rows"] = cache.builtin_training(int(recipe["vocab_size"]))[2]
        if recipe.get("rows"):
            with contextlib.suppress(Exception):  # the charts expired; the tokenizer is fine
                meta["rows"] = _rows_from_doc(store().get_json(recipe["rows"]))
        final = state.register_tokenizer(label, tok, source=str(item.get("source", "")),
                                         meta=meta)
        _recipes()[final] = recipe
    return notes


def _restore_training(doc: dict[str, Any]) -> None:
    record = doc.get("training")
    if isinstance(record, dict) and record.get("job_id"):
        st.session_state[keys.TRAIN_RECORD] = record
        if record.get("label"):
            st.session_state.setdefault(keys.TRAIN_DONE, {})[record["job_id"]] = record["label"]
        # the form as it was for that training (a reload should not reset what was typed)
        st.session_state.setdefault(keys.TRAIN_VOCAB_SIZE, int(record["vocab_size"]))
        st.session_state.setdefault(keys.TRAIN_SPECIALS, ", ".join(record["special_tokens"]))
        if record.get("pattern") in ("gpt2", "cl100k", "o200k"):
            st.session_state.setdefault(keys.TRAIN_PATTERN, record["pattern"])
    job_id = doc.get("train_job")
    if isinstance(job_id, str) and job_id in server_training.training_manager():
        st.session_state[keys.TRAIN_JOB] = job_id


def _restore_corpus(corpus: Any, notes: list[str]) -> None:
    if not isinstance(corpus, dict) or keys.TRAIN_CORPUS in st.session_state:
        return
    try:
        texts = [store().get(blob).decode("utf-8") for blob in corpus["blobs"]]
    except Exception as err:  # noqa: BLE001
        notes.append(f"The uploaded corpus could not be reopened ({display.escaped(str(err))}): "
                     "upload it again.")
        return
    st.session_state[keys.TRAIN_CORPUS] = {
        "name": str(corpus["name"]), "files": corpus["files"], "texts": texts,
        "blobs": corpus["blobs"]}
