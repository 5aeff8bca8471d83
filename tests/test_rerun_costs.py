"""What a rerun must not do again (issue 36): copy the details it reads from a cache, read the
session state once per offered label, or look for the secrets files on every library
lookup. Behaviour, not timings: the same object comes back, a source is read once."""

from __future__ import annotations

from typing import Any

import pytest
import streamlit as st

from ui import cache, hub_models, state
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches


def test_encode_details_are_shared_not_copied_on_every_run() -> None:
    tok = cache.preset("gpt2")
    first = cache.encode_details("preset:gpt2", "shared, not copied", tok)
    assert cache.encode_details("preset:gpt2", "shared, not copied", tok) is first
    assert first.n_tokens == len(tok.encode("shared, not copied"))


def test_decode_details_are_shared_not_copied_on_every_run() -> None:
    tok = cache.preset("gpt2")
    ids = tuple(tok.encode("hello world"))
    first = cache.decode_details("preset:gpt2", ids, tok)
    assert cache.decode_details("preset:gpt2", ids, tok) is first
    assert first.text == "hello world"


def test_the_hub_cache_listing_is_one_shared_tuple(monkeypatch: pytest.MonkeyPatch) -> None:
    import core.services.hub

    monkeypatch.setattr(core.services.hub, "cached_models", lambda: ["Qwen/Qwen3-8B", "openai-community/gpt2"])
    hub_models.cached_repos.clear()
    try:
        first = hub_models.cached_repos()
        assert first == ("Qwen/Qwen3-8B", "openai-community/gpt2")
        assert hub_models.cached_repos() is first
    finally:
        hub_models.cached_repos.clear()  # the stand-in list must not outlive the test


def test_the_picker_list_reads_the_session_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    session = {"mine": {"tok": None, "source": "test", "fingerprint": "f"}}
    monkeypatch.setattr(state, "session_tokenizers", lambda: reads.append(1) or session)
    monkeypatch.setattr(state, "library_labels", lambda: [])
    labels = state.available_tokenizers()
    assert labels[0] == "mine" and "GPT-2 (gpt2)" in labels
    assert len(labels) > len(state.PRESET_LABELS) + 10  # the Hub models are offered too
    assert len(reads) == 1


class _Secrets:
    """Stands in for ``st.secrets``: counts the reads."""

    def __init__(self, value: str) -> None:
        self.value, self.reads = value, 0

    def get(self, key: str, default: Any = None) -> Any:
        self.reads += 1
        return self.value if key == cache.LIBRARY_SECRET else default


def test_the_library_folder_secret_is_read_once_not_per_lookup(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from core.services.library import LIBRARY_ENV_VAR

    secrets = _Secrets(str(tmp_path / "lib"))
    monkeypatch.delenv(LIBRARY_ENV_VAR, raising=False)
    monkeypatch.setattr(st, "secrets", secrets)
    cache._library_secret.clear()
    try:
        roots = {cache.library_root() for _ in range(5)}
    finally:
        cache._library_secret.clear()
    assert roots == {str(tmp_path / "lib")}
    assert secrets.reads == 1


# ---- a Tokenize rerun computes each thing once (issue 36: 20 sessions on one server) ---------


def _tokenize_page() -> Any:
    """An AppTest on Tokenize (a fresh session, GPT-2), after its first run."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"),
                           default_timeout=120)
    at.run()
    at.switch_page("pages/2_Tokenize.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_the_link_and_the_address_come_from_one_pass_over_the_view(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import links

    at = _tokenize_page()
    passes = _counting(monkeypatch, links, "params_of")
    at.run()  # a rerun: the URL was applied already, the link is drawn again
    assert not at.exception
    assert len(passes) == 1  # the copied link and the address bar share one pass
    # the link's copy row (one st.html: ui.copy_line.row_html)
    assert any('data-key="links-Tokenize"' in h.proto.body for h in at.get("html"))


def test_the_picker_lists_the_tokenizers_and_the_hub_cache_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    at = _tokenize_page()
    lists = _counting(monkeypatch, state, "available_tokenizers")
    cache_reads = _counting(monkeypatch, hub_models, "cached_repos")
    at.run()
    assert not at.exception
    (picker,) = [s for s in at.selectbox if s.label == "Tokenizer"]
    assert picker.value == "GPT-2 (gpt2)" and len(picker.options) > 10
    # the sidebar, the picker and the link: once each (it was 9 lists and 29 cache reads)
    assert len(lists) <= 5, len(lists)
    assert len(cache_reads) <= len(lists) + 1, len(cache_reads)


def test_the_counts_are_one_html_block_not_four_metrics() -> None:
    at = _tokenize_page()
    labels = [m.label for m in stats(at)]
    assert labels == ["Tokens", "Characters", "Bytes (UTF-8)", "Characters per token"]
    assert len(at.columns) == 4  # the picker's row alone; the counts add no columns
    assert not at.metric  # one st.html: no element per figure
    assert sum('class="tp-stats"' in h.proto.body for h in at.get("html")) == 1
