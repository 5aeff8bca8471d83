"""Every server limit (ui/limits.py, the pages, ui/links.py) tested at its boundary:
exactly N is accepted with no message, N+1 is refused or cut with the exact message, which
says what was cut and names the setting that gives more.

When the limits are read
------------------------
- ``ui.limits.max_text_chars()``, ``max_ids()``, ``url_text_chars()``, ``max_upload_bytes()``,
  ``max_vocab_size()`` read their environment variable on every call: tests monkeypatch the
  variable. So do the checks that call them (``upload_too_large``, ``vocab_size_problem``,
  the Train page's corpus upload, the sidebar's tokenizer upload, the link parameters in
  ``ui.links``).
- ``ui.cache.MAX_TEXT_CHARS`` (Tokenize, Compare) and ``ui.cache.MAX_IDS`` (Decode) are read
  once, when ``ui.cache`` is first imported (the server start): those pages are tested with
  the value the process started with, the defaults 50,000 characters and 20,000 IDs.
"""

from __future__ import annotations

from tests.markdown_text import shown

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.services.library import TokenizerLibrary
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from ui import cache, limits, links
from ui.state import fingerprint
from ui.site import page
from tests.html_tables import tables
from tests.test_app_pages import open_loader
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")
TRAIN = str(REPO / page("Train").script)
PAGES = {
    "Tokenize": page("Tokenize").script,
    "Decode": page("Decode").script,
    "Compare": page("Compare").script,
}
CORPUS = "the cat sat on the mat. the dog sat on the log. tokens become numbers.\n" * 20
SPECIAL = "<|endoftext|>"
MB = 1000 * 1000  # decimal, as Streamlit's uploader shows sizes (ui/limits.py)

#: The page limits frozen at import (see the module docstring): N for the AppTests.
TEXT_N = cache.MAX_TEXT_CHARS
IDS_N = cache.MAX_IDS


@pytest.fixture(autouse=True)
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test stores long link texts in its own empty library."""
    path = tmp_path / "library"
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(path))
    for name in ("TOKPLAY_MAX_TEXT_CHARS", "TOKPLAY_MAX_IDS", "TOKPLAY_URL_TEXT_CHARS",
                 "TOKPLAY_MAX_UPLOAD_MB", "TOKPLAY_MAX_VOCAB", "TOKPLAY_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    vocab, merges = train_bpe([CORPUS], 300, [SPECIAL])
    return Tokenizer(vocab, merges, [SPECIAL], name="limits-test")


def open_page(page: str, *tokenizers: tuple[str, Tokenizer],
              params: dict[str, str] | None = None, **values: object) -> AppTest:
    """A fresh session on ``page``: ``tokenizers`` in it (the first active), persistent
    session ``values`` (e.g. ``cmp.tokenizers``) and the URL's query ``params``."""
    at = AppTest.from_file(HOME, default_timeout=120)
    if tokenizers:
        at.session_state["ui.tokenizers"] = {
            label: {"tok": t, "source": "test", "fingerprint": fingerprint(t), "meta": {}}
            for label, t in tokenizers
        }
        at.session_state["ui.active"] = tokenizers[0][0]
    for key, value in values.items():
        at.session_state[key.replace("__", ".")] = value
    at.switch_page(PAGES[page])
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    assert_ok(at)
    return at


def assert_ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def metric(at: AppTest, label: str) -> str:
    for m in stats(at):
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}: {[m.label for m in stats(at)]}")


def messages(at: AppTest, needle: str) -> list[str]:
    """Warnings and errors mentioning ``needle`` (an environment variable, a phrase)."""
    return [text for e in [*at.warning, *at.error] if needle in (text := shown(e.value))]


def text_message(n: int, what: str = "tokenizes") -> str:
    return (f"This text has {n:,} characters; the playground {what} only the first "
            f"{TEXT_N:,} (server limit TOKPLAY_MAX_TEXT_CHARS). Paste a shorter text to see all "
            "of it.")


# ---- when each limit is read -------------------------------------------------------------------


def test_limits_are_read_per_call_but_the_page_limits_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    assert limits.max_text_chars() == limits.DEFAULT_MAX_TEXT_CHARS == 50_000
    assert limits.max_ids() == limits.DEFAULT_MAX_IDS == 20_000
    assert limits.url_text_chars() == limits.DEFAULT_URL_TEXT_CHARS == 1_500
    assert limits.max_upload_bytes() == limits.DEFAULT_MAX_UPLOAD_MB * MB == 50 * MB
    assert limits.max_vocab_size() == limits.DEFAULT_MAX_VOCAB == 50_000
    monkeypatch.setenv("TOKPLAY_MAX_TEXT_CHARS", "10")
    monkeypatch.setenv("TOKPLAY_MAX_IDS", "7")
    monkeypatch.setenv("TOKPLAY_URL_TEXT_CHARS", "20")
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "3")
    monkeypatch.setenv("TOKPLAY_MAX_VOCAB", "1000")
    assert (limits.max_text_chars(), limits.max_ids(), limits.url_text_chars(),
            limits.max_upload_bytes(), limits.max_vocab_size()) == (10, 7, 20, 3 * MB, 1000)
    # frozen when ui.cache was imported (the server start): a restart picks a new value up
    assert (cache.MAX_TEXT_CHARS, cache.MAX_IDS) == (TEXT_N, IDS_N)


def test_the_page_limits_are_the_defaults_in_this_process() -> None:
    """The AppTests below use N = the defaults; a shell that exported the variables before
    pytest imported ui.cache would test other numbers (still N and N+1, but say so)."""
    assert (TEXT_N, IDS_N) == (limits.DEFAULT_MAX_TEXT_CHARS, limits.DEFAULT_MAX_IDS)


# ---- text: TOKPLAY_MAX_TEXT_CHARS ----------------------------------------------------------------


@pytest.mark.parametrize("what", ["tokenizes", "compares"])
def test_text_too_long_at_n_and_n_plus_1(what: str) -> None:
    assert limits.text_too_long(TEXT_N, limit=TEXT_N, what=what) is None
    assert limits.text_too_long(TEXT_N + 1, limit=TEXT_N, what=what) == text_message(TEXT_N + 1, what)


def test_text_limit_from_the_environment_at_n_and_n_plus_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_MAX_TEXT_CHARS", "1234")
    n = limits.max_text_chars()
    assert limits.text_too_long(1234, limit=n) is None
    assert limits.text_too_long(1235, limit=n) == (
        "This text has 1,235 characters; the playground tokenizes only the first 1,234 (server "
        "limit TOKPLAY_MAX_TEXT_CHARS). Paste a shorter text to see all of it.")


def test_tokenize_page_text_at_n_and_n_plus_1(tok: Tokenizer) -> None:
    at = open_page("Tokenize", ("mine", tok))
    at.text_area[0].set_value("a" * TEXT_N).run()
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == []
    assert metric(at, "Characters") == f"{TEXT_N:,}"
    at.text_area[0].set_value("a" * (TEXT_N + 1)).run()
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == [text_message(TEXT_N + 1)]
    assert metric(at, "Characters") == f"{TEXT_N:,}"  # the first N, tokenized


#: Compare's tokenizers for the long texts: ONE byte-level BPE, so the page skips "Where the
#: boundaries differ" (core.explain.compare.differing_regions takes minutes on 50,000 characters).
COMPARE_PAIR = ["mine", "Word-level baseline"]


def test_compare_page_text_at_n_and_n_plus_1(tok: Tokenizer) -> None:
    at = open_page("Compare", ("mine", tok), cmp__tokenizers=COMPARE_PAIR)
    at.text_area[0].set_value("a" * TEXT_N).run()
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == []
    (rows,) = tables(at)
    assert [r["tokenizer"] for r in rows] == COMPARE_PAIR
    assert rows[0]["tokens"] == len(tok.encode("a" * TEXT_N)) == TEXT_N
    at.text_area[0].set_value("a" * (TEXT_N + 1)).run()
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == [text_message(TEXT_N + 1, "compares")]
    (rows,) = tables(at)
    assert rows[0]["tokens"] == TEXT_N  # the first N characters only


def test_link_text_at_n_and_n_plus_1(tok: Tokenizer) -> None:
    """``Tokenize?text=...``: the link's text is cut to TOKPLAY_MAX_TEXT_CHARS (read per call
    in ui/links.py; the default here, as on the page)."""
    at = open_page("Tokenize", ("mine", tok), params={"text": "b" * TEXT_N})
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == []
    assert at.text_area[0].value == "b" * TEXT_N
    assert metric(at, "Characters") == f"{TEXT_N:,}"
    at = open_page("Tokenize", ("mine", tok), params={"text": "b" * (TEXT_N + 1)})
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == [
        (f"Link problem: The link's text has {TEXT_N + 1:,} characters; this server keeps the "
         f"first {TEXT_N:,} (TOKPLAY_MAX_TEXT_CHARS).")]
    assert at.text_area[0].value == "b" * TEXT_N
    assert metric(at, "Characters") == f"{TEXT_N:,}"


def test_link_text_limit_follows_the_environment(tok: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_MAX_TEXT_CHARS", "100")
    at = open_page("Compare", ("mine", tok), cmp__tokenizers=COMPARE_PAIR,
                   params={"text": "c" * 100})
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == []
    assert at.text_area[0].value == "c" * 100
    at = open_page("Compare", ("mine", tok), cmp__tokenizers=COMPARE_PAIR,
                   params={"text": "c" * 101})
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == [
        ("Link problem: The link's text has 101 characters; this server keeps the first 100 "
         "(TOKPLAY_MAX_TEXT_CHARS).")]
    assert at.text_area[0].value == "c" * 100


def test_link_to_a_stored_text_over_the_limit_counts_the_text(tok: Tokenizer, library_dir: Path) -> None:
    text_id = TokenizerLibrary(library_dir).save_text("d" * (TEXT_N + 1))
    at = open_page("Tokenize", ("mine", tok), params={"text": "@" + text_id})
    assert at.text_area[0].value == "d" * TEXT_N
    assert messages(at, "TOKPLAY_MAX_TEXT_CHARS") == [
        (f"Link problem: The link's text has {TEXT_N + 1:,} characters; this server keeps the "
         f"first {TEXT_N:,} (TOKPLAY_MAX_TEXT_CHARS).")]


# ---- IDs: TOKPLAY_MAX_IDS ------------------------------------------------------------------------


def ids_message(n: int) -> str:
    return (f"{n:,} IDs given; only the first {IDS_N:,} are decoded (server limit "
            "TOKPLAY_MAX_IDS).")


def test_decode_page_ids_at_n_and_n_plus_1(tok: Tokenizer) -> None:
    at = open_page("Decode", ("mine", tok))
    at.text_area[0].set_value("97 " * IDS_N).run()
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_IDS") == []
    assert metric(at, "IDs") == f"{IDS_N:,}"
    assert metric(at, "Characters") == f"{IDS_N:,}"  # every "a" decoded
    at.text_area[0].set_value("97 " * (IDS_N + 1)).run()
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_IDS") == [ids_message(IDS_N + 1)]
    assert metric(at, "IDs") == f"{IDS_N:,}"
    assert metric(at, "Characters") == f"{IDS_N:,}"


def test_decode_link_ids_at_n_and_n_plus_1(tok: Tokenizer) -> None:
    """``Decode?ids=...`` carrying exactly N IDs, then N+1: the page's limit applies to IDs
    that come from a link just as to typed ones."""
    at = open_page("Decode", ("mine", tok), params={"ids": " ".join(["97"] * IDS_N)})
    assert messages(at, "TOKPLAY_MAX_IDS") == [] and messages(at, "Link problem") == []
    assert metric(at, "IDs") == f"{IDS_N:,}"
    at = open_page("Decode", ("mine", tok), params={"ids": " ".join(["97"] * (IDS_N + 1))})
    assert messages(at, "TOKPLAY_MAX_IDS") == [ids_message(IDS_N + 1)]
    assert messages(at, "Link problem") == []
    assert metric(at, "IDs") == f"{IDS_N:,}"


def test_link_id_list_cap_at_n_and_n_plus_1(tok: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    """ui/links.py keeps at most ``TOKPLAY_MAX_IDS * 12`` characters of a link's ID list
    (read per call): with 10 IDs, 120 characters."""
    monkeypatch.setenv("TOKPLAY_MAX_IDS", "10")
    n = limits.max_ids() * 12
    exact = "11 " * (n // 3)
    assert len(exact) == n == 120
    at = open_page("Decode", ("mine", tok), params={"ids": exact})
    assert messages(at, "Link problem") == []
    assert at.text_area[0].value == exact
    assert metric(at, "IDs") == "40"
    at = open_page("Decode", ("mine", tok), params={"ids": exact + "7"})
    assert messages(at, "Link problem") == [
        ("Link problem: The link's ID list is 121 characters long; only its first 120 characters "
         "(whole IDs) are used. This server decodes at most 10 IDs (TOKPLAY_MAX_IDS).")]
    assert at.text_area[0].value == exact
    assert metric(at, "IDs") == "40"


def test_link_id_list_cap_names_the_setting_and_keeps_whole_ids(
    tok: Tokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKPLAY_MAX_IDS", "10")
    ids = "1, " * 39 + "123"  # 120 characters, then "123" runs past the cap
    at = open_page("Decode", ("mine", tok), params={"ids": ids + "4"})
    (note,) = messages(at, "Link problem")
    assert "TOKPLAY_MAX_IDS" in note
    assert at.text_area[0].value.replace(" ", "").split(",")[-1] in {"1", "1234"}


# ---- link length: TOKPLAY_URL_TEXT_CHARS ---------------------------------------------------------

URL_N = limits.DEFAULT_URL_TEXT_CHARS


def test_text_for_link_at_n_is_the_text_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    assert links.text_for_link("a" * URL_N) == ("a" * URL_N, None)
    assert links.text_for_link("é" * (URL_N // 6)) == ("é" * (URL_N // 6), None)  # %C3%A9: 6 each
    monkeypatch.setenv("TOKPLAY_URL_TEXT_CHARS", "16")
    assert links.text_for_link("a" * 16) == ("a" * 16, None)


@pytest.mark.parametrize(("exact", "over"), [
    ("a" * URL_N, "a" * (URL_N + 1)),
    # the limit counts URL-encoded characters: é is %C3%A9
    ("é" * (URL_N // 6), "é" * (URL_N // 6) + "a"),
], ids=["ascii", "encoded"])
def test_tokenize_link_length_at_n_and_n_plus_1(tok: Tokenizer, library_dir: Path,
                                                exact: str, over: str) -> None:
    at = open_page("Tokenize", ("mine", tok))
    at.text_area[0].set_value(exact).run()
    assert_ok(at)
    assert at.query_params["text"] == exact  # carried in the URL itself
    at.text_area[0].set_value(over).run()
    assert_ok(at)
    value = at.query_params["text"]
    assert value.startswith("@") and len(value) == 17  # stored on the server
    assert TokenizerLibrary(library_dir).load_text(value[1:]) == over


def test_decode_link_length_at_n_and_n_plus_1(tok: Tokenizer, library_dir: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_URL_TEXT_CHARS", "30")
    at = open_page("Decode", ("mine", tok))
    exact = "1," * 7 + "11"  # 30 characters URL-encoded: each comma is %2C
    assert len(links.query_string({"ids": exact})) == len("ids=") + 30
    at.text_area[0].set_value(exact).run()
    assert_ok(at)
    assert at.query_params["ids"] == exact
    at.text_area[0].set_value(exact + "1").run()
    assert_ok(at)
    value = at.query_params["ids"]
    assert value.startswith("@")
    assert TokenizerLibrary(library_dir).load_text(value[1:]) == exact + "1"


# ---- uploads: TOKPLAY_MAX_UPLOAD_MB --------------------------------------------------------------


def test_upload_too_large_at_n_and_n_plus_1_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """At N+1 the two sizes would both round to "50.0 MB": the message gives exact bytes."""
    n = limits.max_upload_bytes()  # the default, 50 MB
    assert n == 50 * MB == 50_000_000
    assert limits.upload_too_large(n) is None
    assert limits.upload_too_large(n + 1) == (
        "These files are 50,000,001 bytes together; this server accepts at most 50,000,000 "
        "bytes (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")
    assert limits.upload_too_large(60 * MB) == (
        "These files are 60.0 MB together; this server accepts at most 50.0 MB "
        "(TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "1")
    assert limits.upload_too_large(MB) is None
    assert limits.upload_too_large(MB + 1) == (
        "These files are 1,000,001 bytes together; this server accepts at most 1,000,000 bytes "
        "(TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")
    assert limits.upload_too_large(2048, limit=2048) is None
    assert limits.upload_too_large(2049, limit=2048) is not None


def test_corpus_file_too_large_at_n_and_n_plus_1_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "1")
    assert limits.corpus_file_too_large("a.txt", MB) is None
    assert limits.corpus_file_too_large("a.txt", MB + 1) == (
        "“a.txt” is 1,000,001 bytes, more than this server's limit of 1,000,000 bytes: it is "
        "left out. Upload less text (or raise TOKPLAY_MAX_UPLOAD_MB).")
    assert limits.corpus_file_too_large("b.txt", MB // 2, before=MB // 2) is None
    assert limits.corpus_file_too_large("b.txt", MB // 2 + 1, before=MB // 2) == (
        "“b.txt” (500.0 KB) would take the corpus to 1,000,001 bytes, past this server's limit "
        "of 1,000,000 bytes: it is left out. Upload less text (or raise TOKPLAY_MAX_UPLOAD_MB).")
    assert limits.corpus_file_too_large("c.txt", 3 * MB, before=MB // 2) == (
        "“c.txt” (3.0 MB) would take the corpus to 3.5 MB, past this server's limit of 1.0 MB: "
        "it is left out. Upload less text (or raise TOKPLAY_MAX_UPLOAD_MB).")


def test_sizes_read_as_streamlits_uploader_shows_them() -> None:
    """Streamlit's uploader shows a 41,200,008-byte file as "41.2MB" (decimal units): every
    message says the same, and a size over the limit never reads like the limit."""
    assert limits.format_bytes(41_200_008) == "41.2 MB"
    assert limits.format_sizes(41_200_008, 50 * MB) == ("41.2 MB", "50.0 MB")
    assert limits.format_sizes(50 * MB + 1, 50 * MB) == ("50,000,001 bytes", "50,000,000 bytes")
    assert limits.format_sizes(50 * MB, 50 * MB) == ("50.0 MB", "50.0 MB")  # equal: no need


def test_the_uploaders_let_a_file_twice_too_large_reach_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streamlit refuses a file over an uploader's ``max_upload_size`` in the browser, with
    its reason only on hover. Both uploaders let files up to twice the limit through, so the
    page itself says why it refuses one; .streamlit/config.toml's server cap allows that."""
    import tomllib

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] >= 2 * limits.DEFAULT_MAX_UPLOAD_MB
    assert limits.upload_transport_mb() == 2 * limits.DEFAULT_MAX_UPLOAD_MB == 100
    at = open_page("Tokenize")
    open_loader(at)
    assert at.sidebar.get("file_uploader")[0].proto.max_upload_size_mb == 100
    at = AppTest.from_file(TRAIN, default_timeout=60)
    at.run()
    at.radio[0].set_value("Upload text files").run()
    assert at.file_uploader(key="train.uploads").proto.max_upload_size_mb == 100
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "3")  # a smaller limit lowers the cap too
    at.run()
    assert at.file_uploader(key="train.uploads").proto.max_upload_size_mb == 6


def test_upload_limit_note_follows_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert limits.upload_limit_note() == "Up to 50.0 MB in total"
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "3")
    assert limits.upload_limit_note(per_file=True) == "Up to 3.0 MB per file"


def drop_zone_note(at: AppTest, key: str) -> str | None:
    """What the drop zone of the uploader ``key`` says of the limit: the CSS ``content`` the
    page gives it (Streamlit's own line, its transport cap, hidden under it), or None."""
    import re

    from ui.live_input import key_class

    zone = re.escape(f'.{key_class(key)} [data-testid="stFileUploaderDropzoneInstructions"] span')
    for body in (h.proto.body for h in at.get("html")):
        hidden = re.search(zone + r" \{ font-size: 0; \}", body)
        if hidden and (shown := re.search(zone + r'::after \{ content: "([^"]*)"', body)):
            return shown.group(1)
    return None


def test_every_uploader_states_our_limit_in_its_drop_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit prints its uploader's max_upload_size in the drop zone ("100MB per file"),
    twice our limit on purpose (a file too large reaches the page, which says why). Each
    uploader's drop zone states our limit instead: in total (Train, the sidebar's loader) or
    per file (Evaluate)."""
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "3")
    at = AppTest.from_file(TRAIN, default_timeout=60)
    at.run()
    at.radio[0].set_value("Upload text files").run()
    assert_ok(at)
    assert drop_zone_note(at, "train.uploads") == "Up to 3.0 MB in total"
    assert at.file_uploader(key="train.uploads").proto.max_upload_size_mb == 6
    at = open_page("Tokenize")
    open_loader(at)
    assert drop_zone_note(at, "ui.sidebar_upload") == "Up to 3.0 MB in total"
    assert at.sidebar.get("file_uploader")[0].proto.max_upload_size_mb == 6
    at = AppTest.from_file(HOME, default_timeout=120)
    at.switch_page(page("Evaluate").script)
    at.run()
    assert_ok(at)
    assert drop_zone_note(at, "eva.upload") == "Up to 3.0 MB per file"
    assert at.file_uploader(key="eva.upload").proto.max_upload_size_mb == 6


def test_sidebar_tokenizer_upload_at_n_and_n_plus_1_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sidebar's loader sums the files (ui/widgets.py tokenizer_uploader)."""
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "1")
    for size, refused in ((MB, False), (MB + 1, True)):
        at = open_page("Tokenize")
        open_loader(at)
        half = size // 2
        at.sidebar.get("file_uploader")[0].set_value([
            ("a.tiktoken", b"x" * half, "application/octet-stream"),
            ("b.tiktoken", b"x" * (size - half), "application/octet-stream")]).run()
        assert_ok(at)
        size_errors = messages(at, "TOKPLAY_MAX_UPLOAD_MB")
        if refused:
            assert size_errors == [
                ("These files are 1,000,001 bytes together; this server accepts at most "
                 "1,000,000 bytes (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")]
        else:
            assert size_errors == []
            # accepted for loading: the loader itself answers (these are not tokenizer files)
            assert messages(at, "Could not load these files")


@pytest.mark.xdist_group("jobs")  # the Train page starts a training worker
def test_train_corpus_upload_at_n_and_n_plus_1_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Train page sums the corpus files and leaves out the one that would pass the limit."""
    monkeypatch.setenv("TOKPLAY_MAX_UPLOAD_MB", "1")
    at = AppTest.from_file(TRAIN, default_timeout=60)
    at.run()
    assert_ok(at)
    at.radio[0].set_value("Upload text files").run()
    uploader = at.file_uploader(key="train.uploads")
    uploader.set_value([("first.txt", b"a " * (MB // 4), "text/plain"),
                        ("second.txt", b"b " * (MB // 4), "text/plain")]).run()  # exactly N
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_UPLOAD_MB") == []
    shown = "\n".join(m.value for m in at.markdown)
    assert "`first.txt` · 500.0 KB" in shown and "`second.txt` · 500.0 KB" in shown
    assert not at.button(key="train.start").disabled
    at.file_uploader(key="train.uploads").set_value(
        [("first.txt", b"a " * (MB // 4), "text/plain"),
         ("second.txt", b"b " * (MB // 4) + b"!", "text/plain")]).run()  # N + 1
    assert_ok(at)
    assert messages(at, "TOKPLAY_MAX_UPLOAD_MB") == [
        ("“second.txt” (500.0 KB) would take the corpus to 1,000,001 bytes, past this server's "
         "limit of 1,000,000 bytes: it is left out. Upload less text (or raise "
         "TOKPLAY_MAX_UPLOAD_MB).")]
    shown = "\n".join(m.value for m in at.markdown)
    assert "`first.txt`" in shown and "`second.txt`" not in shown
    assert not at.button(key="train.start").disabled  # the file that fits is still used


# ---- vocab size: TOKPLAY_MAX_VOCAB and the 257 minimum -------------------------------------------


def test_vocab_size_maximum_at_n_and_n_plus_1(monkeypatch: pytest.MonkeyPatch) -> None:
    n = limits.max_vocab_size()
    assert n == 50_000
    assert limits.vocab_size_problem(n, 1) is None
    assert limits.vocab_size_problem(n + 1, 1) == (
        "Vocab size 50,001 is too large for this server: at most 50,000 (set TOKPLAY_MAX_VOCAB "
        "to change the limit). Byte-level BPE vocabularies are usually 1,000 to 200,000.")
    monkeypatch.setenv("TOKPLAY_MAX_VOCAB", "1000")
    assert limits.vocab_size_problem(1000, 1) is None
    assert limits.vocab_size_problem(1001, 1) == (
        "Vocab size 1,001 is too large for this server: at most 1,000 (set TOKPLAY_MAX_VOCAB "
        "to change the limit). Byte-level BPE vocabularies are usually 1,000 to 200,000.")
    assert limits.vocab_size_problem is limits.vocab_size_problem


def test_vocab_size_minimum_at_n_and_n_minus_1() -> None:
    """256 bytes + one special token: 257 is the smallest vocab (no merge at all)."""
    assert limits.vocab_size_problem(257, 1) is None
    assert limits.vocab_size_problem(256, 1) == (
        "Vocab size 256 is too small: the 256 single bytes and 1 special token(s) already take "
        "257 IDs. Choose at least 257.")
    assert limits.vocab_size_problem(256, 0) is None
    assert limits.vocab_size_problem(255, 0) is not None


@pytest.mark.xdist_group("jobs")  # the Train page starts a training worker
def test_train_page_vocab_size_at_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_MAX_VOCAB", "1000")
    at = AppTest.from_file(TRAIN, default_timeout=60)
    at.run()
    for value, problem in ((1000, None), (1001, "too large"), (257, None), (256, "too small")):
        at.number_input[0].set_value(value).run()
        assert_ok(at)
        errors = [e.value for e in at.error if "Vocab size" in e.value]
        if problem is None:
            assert errors == [], value
            assert not at.button(key="train.start").disabled
        else:
            assert len(errors) == 1 and problem in errors[0], (value, errors)
            assert at.button(key="train.start").disabled


# ---- the pure checks, exactly (each kills a surviving mutant of benchmarks/mutation.sh) ------------


@pytest.mark.parametrize(("setting", "env", "expected"), [
    (limits.url_text_chars, {"TOKPLAY_URL_TEXT_CHARS": "5"}, 16),  # a floor: links need room
    (limits.url_text_chars, {"TOKPLAY_URL_TEXT_CHARS": "16"}, 16),
    (limits.url_text_chars, {"TOKPLAY_URL_TEXT_CHARS": "17"}, 17),
    (limits.train_memory_mb, {"TOKPLAY_TRAIN_MEMORY_MB": "0"}, 0),  # 0 = no memory limit
    (limits.max_vocab_size, {"TOKPLAY_MAX_VOCAB": "100"}, 257),  # 256 bytes + one special
    (limits.max_vocab_size, {"TOKPLAY_MAX_VOCAB": "257"}, 257),
    (limits.max_vocab_size, {"TOKPLAY_MAX_VOCAB": "258"}, 258),
    (limits.max_concurrent_trainings, {}, limits.DEFAULT_MAX_TRAININGS),
])
def test_settings_and_their_floors(monkeypatch: pytest.MonkeyPatch, setting, env, expected) -> None:
    for name in ("TOKPLAY_URL_TEXT_CHARS", "TOKPLAY_TRAIN_MEMORY_MB", "TOKPLAY_MAX_VOCAB",
                 "TOKPLAY_MAX_TRAININGS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert setting() == expected


def test_an_explicit_maximum_wins_over_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKPLAY_MAX_VOCAB", raising=False)
    assert limits.vocab_size_problem(2000, 0, maximum=1000) == (
        "Vocab size 2,000 is too large for this server: at most 1,000 (set TOKPLAY_MAX_VOCAB "
        "to change the limit). Byte-level BPE vocabularies are usually 1,000 to 200,000.")


def test_decode_upload_names_up_to_four_bad_bytes_and_the_first_nul() -> None:
    from core.errors import CorpusError

    with pytest.raises(CorpusError) as info:
        limits.decode_upload("x.txt", b"ab\xff\xfe\xfd\xfc\xfb")
    assert str(info.value) == (
        "“x.txt” is not valid UTF-8: bad byte(s) ff fe fd fc at byte offset 2 (invalid start "
        "byte). Upload a UTF-8 text file (re-save it as UTF-8 in your editor).")
    for data, offset in ((b"\x00abc", 0), (b"a\x00b\x00", 1)):
        with pytest.raises(CorpusError) as info:
            limits.decode_upload("y.bin", data)
        assert str(info.value) == (
            f"“y.bin” looks like a binary file, not text: a NUL byte at byte offset {offset}. "
            "Upload a plain UTF-8 .txt file.")


def test_readable_token_shows_every_kind_of_byte() -> None:
    assert limits.readable_token(b"a\rb") == "a\\rb"
    assert limits.readable_token(b"a\x00b") == "a\\x00b"  # printable characters stay as they are
    assert limits.readable_token(b"\x00\x01") == "\\x00\\x01"
    assert limits.readable_token("é\u200b".encode()) == "é\\xe2\\x80\\x8b"  # zero-width space


def test_format_bytes_at_its_unit_boundaries() -> None:
    assert [limits.format_bytes(n) for n in (0, 999, 1000, 999_949, 999_950, MB)] == [
        "0 B", "999 B", "1.0 KB", "999.9 KB", "1.0 MB", "1.0 MB"]
    assert limits.format_bytes(999_949_999) == "999.9 MB"
    assert limits.format_bytes(1000 * MB) == "1.0 GB"
    assert limits.format_bytes(5000 * 1000 * MB) == "5000.0 GB"


def test_readable_token_makes_whitespace_visible_and_keeps_broken_bytes() -> None:
    assert limits.readable_token(b" a\n\tb") == "·a↵→b"
    assert limits.readable_token(b"\xe2\x82") == "\\xe2\\x82"  # half a character, not an error


def test_special_tokens_split_on_commas_and_lines_not_spaces() -> None:
    assert limits.parse_special_tokens("<|a b|>, <|c|>\n<|d|>") == ["<|a b|>", "<|c|>", "<|d|>"]


def test_training_settings_read_their_own_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_MAX_TRAININGS", "3")
    monkeypatch.delenv("TOKPLAY_TRAIN_MEMORY_MB", raising=False)
    assert limits.max_concurrent_trainings() == 3
    assert limits.train_memory_mb() == limits.DEFAULT_MEMORY_MB == 2048
