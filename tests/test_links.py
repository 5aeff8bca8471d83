"""Links (ui/links.py): a page opened with query parameters shows that view, bad parameters give
a clear message and never an exception, long texts go through the server's text store, and a
saved-library tokenizer reopens in a fresh session. AppTest, one fresh session per ``open_url``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from streamlit.testing.v1 import AppTest

from core.services.library import TokenizerLibrary
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from ui import links, state
from ui.state import fingerprint
from ui.site import page
from tests.copy_lines import copy_lines, copied
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")
PAGES = {
    "Tokenize": page("Tokenize").script,
    "Decode": page("Decode").script,
    "Vocabulary": page("Vocabulary").script,
    "Compare": page("Compare").script,
}
GPT2 = "GPT-2 (gpt2)"
CORPUS = "the cat sat on the mat. the dog sat on the log. low lower lowest newer wider\n" * 30
SPECIAL = "<|endoftext|>"


@pytest.fixture(autouse=True)
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty library (never the user's real one)."""
    path = tmp_path / "library"
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(path))
    monkeypatch.delenv("TOKPLAY_PUBLIC_URL", raising=False)
    return path


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    vocab, merges = train_bpe([CORPUS], 300, [SPECIAL])
    return Tokenizer(vocab, merges, [SPECIAL], name="links-test")


def open_url(page: str, params: dict[str, str | list[str]] | None = None,
             *tokenizers: tuple[str, Tokenizer]) -> AppTest:
    """A fresh session opening ``page`` with ``params`` in its URL (no exception allowed)."""
    at = AppTest.from_file(HOME, default_timeout=120)
    if tokenizers:
        at.session_state["ui.tokenizers"] = {
            label: {"tok": t, "source": "test", "fingerprint": fingerprint(t), "meta": {}}
            for label, t in tokenizers
        }
        at.session_state["ui.active"] = tokenizers[0][0]
    at.switch_page(PAGES[page])
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def reopen(link: str) -> AppTest:
    """Open a copied link (``/Page?query``) in a new session."""
    parts = urlsplit(link)
    page = parts.path.strip("/")
    params = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(parts.query).items()}
    return open_url(page, params)


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in stats(at) if m.label == label)


def the_link(at: AppTest) -> str:
    """The link in the "Copy link" popover."""
    found = [t for t in copied(at) if "?" in t or t.endswith("/")]
    assert found, "no link shown"
    return found[0]


def html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def warnings(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


@pytest.fixture(scope="module")
def gpt2() -> Tokenizer:
    from core.formats.presets import load_preset

    return load_preset("gpt2")


# ---- pure helpers -----------------------------------------------------------------------------


def test_query_string_and_flags() -> None:
    assert links.query_string({"tok": [GPT2, "lib:0123456789abcdef"]}) == (
        "tok=GPT-2%20%28gpt2%29&tok=lib%3A0123456789abcdef")
    assert links.parse_flag("TRUE") is True and links.parse_flag("0") is False
    assert links.parse_flag("2") is None
    assert links.shown("`x`\n") == "`` `x`? ``"  # a code span that holds the backticks


# ---- a link opens its view ------------------------------------------------------------------


def test_tokenize_link_shows_the_tokens(gpt2: Tokenizer) -> None:
    at = open_url("Tokenize", {"tok": GPT2, "text": "hello world"})
    assert at.session_state["ui.active"] == GPT2
    assert at.text_area[0].value == "hello world"
    assert metric(at, "Tokens") == "2"
    assert "<sub>31373</sub>" in html(at) and "<sub>995</sub>" in html(at)
    assert gpt2.encode("hello world") == [31373, 995]
    # the address bar leaves out what a fresh session shows anyway (GPT-2); the copied link
    # names everything
    assert "tok" not in at.query_params and at.query_params["text"] == "hello world"
    assert the_link(at).startswith("/Tokenize?tok=GPT-2%20%28gpt2%29&text=hello%20world")


def test_tokenize_toggles_and_word_from_link(gpt2: Tokenizer) -> None:
    at = open_url("Tokenize", {"tok": "gpt2", "text": " the cat\n", "show_ids": "0",
                               "gpt2": "1", "word": " cat", "tab": "why"})
    assert at.toggle(key="_w.tok.show_ids").value is False
    assert at.toggle(key="_w.tok.gpt2_view").value is True
    assert at.selectbox(key="_w.tok.word").value == " cat"
    assert "Ġthe" in html(at)
    assert at.query_params["word"] == " cat" and at.query_params["gpt2"] == "1"
    assert at.query_params["tab"] == "why"  # the open tab is part of the view


def test_the_link_never_names_a_word_the_text_lost(gpt2: Tokenizer) -> None:
    """The traced word follows the text: after an edit that drops it, the link (drawn at the
    top of the page) names the word the page traces now, not the old one."""
    at = open_url("Tokenize", {"tok": GPT2, "text": "the cat sat", "word": " cat", "tab": "why"})
    assert params_of(the_link(at))["word"] == [" cat"]
    at.text_area[0].set_value("hello wonderful world").run()
    assert not at.exception
    assert at.selectbox(key="_w.tok.word").value == " wonderful"  # the longest: the default
    link = the_link(at)
    assert params_of(link)["word"] == [" wonderful"]
    assert "word" not in at.query_params  # the default: the address bar leaves it out
    again = reopen(link)
    assert again.selectbox(key="_w.tok.word").value == " wonderful"
    at.text_area[0].set_value("").run()  # no text, no word to trace: the link names none
    assert not at.exception
    assert "word" not in params_of(the_link(at))


def test_the_link_is_on_the_page_ready_to_copy(gpt2: Tokenizer) -> None:
    """One click copies the link: it is a copy line on the page itself (``ui.copy_line``'s
    copy button), not inside a popover that must be opened first."""
    for name in PAGES:
        at = open_url(name, {"tok": GPT2})
        assert not at.get("popover"), name  # nothing to open: the session has no unsaved tokenizer
        (wraps,) = [w for t, w in copy_lines(at) if t.startswith("/" + name)]
        assert not wraps  # one line


def params_of(link: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(link).query)


def test_widget_changes_write_back_to_the_url(gpt2: Tokenizer) -> None:
    at = open_url("Tokenize", {"tok": GPT2, "text": "hello"})
    at.text_area[0].set_value("bye now").run()
    assert not at.exception
    assert at.query_params["text"] == "bye now"  # the URL follows the view
    assert at.text_area[0].value == "bye now"  # and the old URL did not win back
    at.toggle(key="_w.tok.show_ids").set_value(False).run()
    assert at.query_params["show_ids"] == "0" and at.text_area[0].value == "bye now"


@pytest.mark.parametrize("page", list(PAGES))
def test_plain_page_keeps_a_plain_address(gpt2: Tokenizer, page: str) -> None:
    at = open_url(page)
    at.run()  # a second run (any click) must not add parameters either
    assert not at.exception
    assert dict(at.query_params) == {}, at.query_params
    assert "tok=" in the_link(at)  # the copied link is explicit


def test_decode_link(gpt2: Tokenizer) -> None:
    at = open_url("Decode", {"tok": GPT2, "ids": "[15496, 11, 995]"})
    assert at.text_area[0].value == "[15496, 11, 995]"
    assert metric(at, "IDs") == "3"
    assert "Hello, world" in html(at)
    assert at.query_params["ids"] == "[15496, 11, 995]"


def test_vocabulary_link_selects_a_token(gpt2: Tokenizer) -> None:
    at = open_url("Vocabulary", {"tok": GPT2, "token": "9288", "q": "ing", "order": "longest first"})
    assert at.number_input(key="_w.voc.token").value == 9288
    assert at.text_input[0].value == "ing"
    assert at.selectbox(key="_w.voc.order").value == "longest first"
    assert any(gpt2.vocab[9288].hex(" ") in m.value for m in at.markdown)
    assert at.query_params["token"] == "9288"


def test_compare_link(gpt2: Tokenizer) -> None:
    at = open_url("Compare", {"tok": [GPT2, "Char-level baseline"], "text": "hello there"})
    assert at.multiselect[0].value == [GPT2, "Char-level baseline"]
    assert at.text_area[0].value == "hello there"
    assert at.query_params["tok"] == [GPT2, "Char-level baseline"]


def test_link_round_trip_in_a_fresh_session(gpt2: Tokenizer) -> None:
    first = open_url("Tokenize", {"tok": GPT2})
    first.text_area[0].set_value("round trip ✓ 日本").run()
    first.toggle(key="_w.tok.gpt2_view").set_value(True).run()
    second = reopen(the_link(first))
    assert second.text_area[0].value == "round trip ✓ 日本"
    assert second.toggle(key="_w.tok.gpt2_view").value is True
    assert html(second) == html(first)
    assert the_link(second) == the_link(first)


# ---- hostile and broken parameters ----------------------------------------------------------


@pytest.mark.parametrize("value", ["../../etc/passwd", "lib:' OR 1=1 --", "lib:../../etc/passwd",
                                   "lib:0123456789ABCDEF", "x" * 5000, "<script>alert(1)</script>"])
def test_hostile_tokenizer_gives_a_clear_message(gpt2: Tokenizer, value: str) -> None:
    at = open_url("Tokenize", {"tok": value, "text": "hello"})
    text = warnings(at)
    assert "Link problem" in text and "instead" in text, text
    if value.startswith("<"):
        assert f"`{value}`" in text  # inside a code span: shown as text, never run as HTML
    assert at.session_state["ui.active"] is None or at.session_state["ui.active"] == GPT2
    assert metric(at, "Characters") == "5"  # the rest of the link still applies
    assert "tok" not in at.query_params  # the address bar now shows the default view
    assert "tok=GPT-2%20%28gpt2%29" in the_link(at)


def test_unknown_saved_tokenizer_says_so(gpt2: Tokenizer) -> None:
    at = open_url("Decode", {"tok": "lib:0123456789abcdef", "ids": "1 2"})
    assert "not in this server's library" in warnings(at)
    assert "may have been deleted" in warnings(at)


def test_huge_parameters_are_cut_with_a_message(gpt2: Tokenizer) -> None:
    from ui.cache import MAX_TEXT_CHARS

    at = open_url("Tokenize", {"tok": GPT2, "text": "a" * 400_000})
    assert "400,000 characters" in warnings(at)
    assert metric(at, "Characters") == f"{MAX_TEXT_CHARS:,}"
    assert at.query_params["text"].startswith("@")  # too long for a URL: stored server-side


def test_ten_megabyte_query_is_dropped_without_an_error(gpt2: Tokenizer) -> None:
    # Streamlit itself ignores query strings over 512 Ki characters: the page opens as usual
    at = open_url("Tokenize", {"tok": "x" * 10_000_000, "text": "b" * 10_000})
    assert at.text_area[0].value == state.SAMPLE_TEXT  # the default view, whole
    assert metric(at, "Tokens") == f"{len(gpt2.encode(state.SAMPLE_TEXT)):,}"


@pytest.mark.parametrize(("params", "expected"), [
    ({"text": "@../../../etc/passwd"}, "not a valid stored-text ID"),
    ({"text": "@0123456789abcdef"}, "not stored on this server"),
    ({"show_ids": "maybe"}, "is not 1 or 0"),
    ({"word": "w" * 1000}, "longer than any pre-token"),
])
def test_bad_tokenize_params(gpt2: Tokenizer, params: dict[str, str], expected: str) -> None:
    at = open_url("Tokenize", {"tok": GPT2, **params})
    assert expected in warnings(at)


@pytest.mark.parametrize(("params", "expected"), [
    ({"token": "-1"}, "is not a token ID"),
    ({"token": "1e9"}, "is not a token ID"),
    ({"token": "999999999"}, "outside this vocabulary"),
    ({"order": "DROP TABLE"}, "is not one of"),
])
def test_bad_vocabulary_params(gpt2: Tokenizer, params: dict[str, str], expected: str) -> None:
    at = open_url("Vocabulary", {"tok": GPT2, **params})
    assert expected in warnings(at)
    assert 0 <= at.number_input(key="_w.voc.token").value < gpt2.n_vocab


def test_bad_ids_are_flagged_not_fatal(gpt2: Tokenizer) -> None:
    at = open_url("Decode", {"tok": GPT2, "ids": "1, x, 2; DROP TABLE tokenizers"})
    assert "not token IDs" in warnings(at)


# ---- long texts -------------------------------------------------------------------------------


def test_long_text_goes_through_the_text_store(gpt2: Tokenizer, library_dir: Path) -> None:
    text = ("A long text that does not fit in a URL: 日本語, emoji 🧩, tabs\t and\nnewlines. " * 40)
    first = open_url("Tokenize", {"tok": GPT2})
    first.text_area[0].set_value(text).run()
    value = first.query_params["text"]
    assert value.startswith("@") and len(value) == 17
    assert TokenizerLibrary(library_dir).load_text(value[1:]) == text
    second = reopen(the_link(first))
    assert second.text_area[0].value == text
    assert metric(second, "Tokens") == f"{len(gpt2.encode(text)):,}"


def test_long_ids_go_through_the_text_store(gpt2: Tokenizer) -> None:
    ids = ", ".join(str(i) for i in range(1000, 1600))
    first = open_url("Decode", {"tok": GPT2})
    first.text_area[0].set_value(ids).run()
    assert first.query_params["ids"].startswith("@")
    second = reopen(the_link(first))
    assert second.text_area[0].value == ids
    assert metric(second, "IDs") == "600"


# ---- saved tokenizers -------------------------------------------------------------------------


def test_saved_tokenizer_link_reopens_it_in_a_fresh_session(tok: Tokenizer, library_dir: Path) -> None:
    entry = TokenizerLibrary(library_dir).save(
        tok.vocab, tok.merges, name="team bpe", special_tokens=[SPECIAL], pattern="gpt2",
        corpus_name="cats.txt", corpus_size=len(CORPUS))
    text = "the lowest cat sat<|endoftext|>newer"
    at = open_url("Tokenize", {"tok": f"lib:{entry.id}", "text": text})
    label = f"📚 team bpe · {entry.id}"
    assert at.session_state["ui.active"] == label
    assert at.selectbox(key="tok.tokenizer").value == label
    assert metric(at, "Tokens") == f"{len(tok.encode(text)):,}"
    for i in tok.encode(text):
        assert f"<sub>{i}</sub>" in html(at)
    assert at.query_params["tok"] == f"lib:{entry.id}"
    # every picker offers it
    assert label in open_url("Compare").multiselect[0].options


def test_session_tokenizer_is_saved_from_the_link_popover(tok: Tokenizer, library_dir: Path) -> None:
    at = open_url("Vocabulary", {"token": "280"}, ("mine", tok))
    assert "tok" not in at.query_params  # unsaved: not linkable, and the popover says so
    assert any("lives only in your browser session" in i.value for i in at.info)
    at.button(key="links.Vocabulary.save.button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    entries = TokenizerLibrary(library_dir).list()
    assert [e.name for e in entries] == ["mine"]
    assert at.query_params["tok"] == f"lib:{entries[0].id}"
    again = reopen(the_link(at))
    assert again.number_input(key="_w.voc.token").value == 280
    assert again.session_state["ui.active"] == f"📚 mine · {entries[0].id}"
    assert any(tok.vocab[280].hex(" ") in m.value for m in again.markdown)


def test_deleted_saved_tokenizer_link(tok: Tokenizer, library_dir: Path) -> None:
    lib = TokenizerLibrary(library_dir)
    entry = lib.save(tok.vocab, tok.merges, name="gone", special_tokens=[SPECIAL])
    lib.delete(entry.id)
    at = open_url("Vocabulary", {"tok": f"lib:{entry.id}"})
    assert "not in this server's library" in warnings(at)


def test_limits_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import limits

    monkeypatch.setenv("TOKPLAY_MAX_TRAININGS", "5")
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "1")
    monkeypatch.setenv("TOKPLAY_URL_TEXT_CHARS", "not a number")
    assert limits.max_concurrent_trainings() == 5
    assert limits.upload_too_large(2 * 1024 * 1024) is not None
    assert limits.url_text_chars() == limits.DEFAULT_URL_TEXT_CHARS


@pytest.mark.xdist_group("jobs")  # starts a training worker, like tests/test_app_train.py
def test_trained_tokenizer_is_saved_from_the_train_page(library_dir: Path) -> None:
    import time

    at = AppTest.from_file(str(REPO / page("Train").script), default_timeout=60)
    at.run()
    at.number_input[0].set_value(300).run()
    at.button(key="train.start").click().run()
    deadline = time.monotonic() + 120
    while not any(b.key == "train.save.button" for b in at.button):
        assert time.monotonic() < deadline, "training did not end in time"
        time.sleep(0.3)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="train.save.name").set_value("trained here").run()
    at.button(key="train.save.button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [entry] = TokenizerLibrary(library_dir).list()
    assert (entry.name, entry.vocab_size, entry.corpus_name) == ("trained here", 300, "built-in corpus")
    assert entry.corpus_size > 100_000 and entry.special_tokens == ("<|endoftext|>",)
    assert any(f"lib:{entry.id}" in s.value for s in at.success)


# ---- ?page=: the static build's links (one index.html on a static host) ----------------------


def _open_home(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(HOME, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_home_opens_the_page_a_link_names_with_its_view():
    at = _open_home({"page": "tokenize", "text": "naïve café, hello world"})
    assert [t.value for t in at.title] == ["🔤 Tokenize"]
    assert at.text_area[0].value == "naïve café, hello world"
    assert dict(at.query_params) == {"text": "naïve café, hello world"}  # page= is spent


def test_an_unknown_page_in_a_link_says_so_on_home():
    at = _open_home({"page": "../../Train"})
    assert [t.value for t in at.title] == ["🧩 Tokenizer Playground"]
    assert any("which does not exist" in w.value for w in at.warning)
    assert "page" not in at.query_params


def test_static_build_links_name_the_page_in_the_query(monkeypatch):
    """A static host serves only index.html: the link is /?page=Tokenize&..., and opening
    it shows the same view."""
    monkeypatch.setenv("TOKPLAY_RUNTIME", "browser")
    at = open_url("Tokenize", {"text": "hello there"})
    link = the_link(at)
    parts = urlsplit(link)
    query = parse_qs(parts.query)
    assert parts.path == "/" and query["page"] == ["Tokenize"]
    assert query["text"] == ["hello there"] and query["tok"] == [GPT2]
    again = _open_home({k: v[0] for k, v in parse_qs(parts.query).items()})
    assert [t.value for t in again.title] == ["🔤 Tokenize"]
    assert metric(again, "Tokens") == metric(at, "Tokens")
