"""ui/serving.py and deploy/warm_start.py: the server's sockets answer without Nagle's delay,
and the caches a first visit needs are filled once the server is up."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core.formats.presets
from deploy import warm_start
from deploy.launch import streamlit_command
from ui import cache, serving

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app.py")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening socket made as Streamlit 1.67 makes its own (protocol 0: asyncio leaves
    Nagle's algorithm on for the connections it accepts)."""
    server = socket.socket(socket.AF_INET)
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server
    server.close()


def nodelay(sock: socket.socket) -> bool:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="Linux: /proc lists the sockets")
def test_tcp_nodelay_covers_the_listener_and_the_connections_it_accepts_later(
        listener: socket.socket) -> None:
    assert not nodelay(listener)
    assert serving.tcp_nodelay() >= 1
    assert nodelay(listener)
    with socket.create_connection(listener.getsockname()):
        accepted, _ = listener.accept()
        with accepted:
            assert nodelay(accepted)  # inherited: no need to look again per connection


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="Linux: /proc lists the sockets")
def test_a_page_run_sets_tcp_nodelay_once_per_process(listener: socket.socket) -> None:
    serving.prepare_process.clear()
    at = AppTest.from_file(HOME, default_timeout=120)
    at.run()
    assert not at.exception
    assert nodelay(listener)


def test_tcp_nodelay_does_nothing_without_proc(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setattr(serving, "_FD_DIR", str(tmp_path / "missing"))
    assert serving.tcp_nodelay() == 0


def test_warm_loads_each_preset_once_for_every_later_page(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []
    real = core.formats.presets.load_preset

    def counting(name: str):  # type: ignore[no-untyped-def]
        loaded.append(name)
        return real(name)

    monkeypatch.setattr(core.formats.presets, "load_preset", counting)
    cache.preset.clear()
    try:
        assert serving.warm(("presets",)) == []
        assert sorted(loaded) == ["cl100k_base", "gpt2", "o200k_base"]
        cache.preset("gpt2")  # what a page asks next: already there
        assert len(loaded) == 3
    finally:
        cache.preset.clear()  # the counting loads must not outlive the test


def test_warm_builds_the_vocabulary_page_first_table(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real = cache.search_rows  # core.engine.vocab_table's, as ui.cache calls it

    def counting(rows, query):  # type: ignore[no-untyped-def]
        built.append(query)
        return real(rows, query)

    monkeypatch.setattr(cache, "search_rows", counting)
    cache.vocab_table.clear()
    try:
        assert serving.warm(("views",)) == []
        assert built == [""]
        cache.vocab_table("preset:gpt2", "", cache.preset("gpt2"), order="ID")  # the page's ask
        assert built == [""]
    finally:
        cache.vocab_table.clear()


def test_warm_reports_a_failing_step_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise OSError("no such file: gpt2-vocab.bpe.gz")

    monkeypatch.setattr(serving, "WARM_STEPS", (("presets", broken), ("imports", lambda: None)))
    assert serving.warm() == ["presets: OSError: no such file: gpt2-vocab.bpe.gz"]


def test_make_run_and_serve_start_through_the_warm_start_and_the_asgi_app() -> None:
    cmd = streamlit_command(8765, warm=True)
    assert cmd[:4] == [sys.executable, "deploy/warm_start.py", "run", "deploy/asgi.py"]
    assert "deploy/warm_start.py run deploy/asgi.py" in (REPO / "Makefile").read_text(encoding="utf-8")
    serve = (REPO / "deploy" / "serve.py").read_text(encoding="utf-8")
    assert "warm=True" in serve and "app=REPO / APP_ENTRY" in serve


def test_the_warm_start_warms_once_streamlit_is_up(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import streamlit.runtime

    calls: list[object] = []
    monkeypatch.setattr(streamlit.runtime, "exists", lambda: True)
    monkeypatch.setattr(serving, "warm", lambda steps=None: calls.append(steps) or [])
    monkeypatch.setattr(serving, "freeze_heap", lambda: calls.append("frozen"))
    warm_start.warm_when_up(wait_s=5)
    assert calls == [None, "frozen"]  # what the warm-up loaded leaves the full collections
    assert "warm-up done in" in capsys.readouterr().err


def test_freeze_heap_moves_what_is_alive_out_of_the_collections() -> None:
    import gc

    gc.unfreeze()
    kept = [[i] for i in range(1000)]  # containers alive now: frozen, never walked again
    try:
        serving.freeze_heap()
        assert gc.get_freeze_count() >= len(kept)
        assert gc.isenabled()  # the collector still runs for what comes after
    finally:
        gc.unfreeze()


def test_the_warm_start_gives_up_when_streamlit_never_starts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import streamlit.runtime

    monkeypatch.setattr(streamlit.runtime, "exists", lambda: False)
    monkeypatch.setattr(serving, "warm", lambda steps=None: pytest.fail("warmed without a server"))
    warm_start.warm_when_up(wait_s=0.2)
    assert "warm-up skipped" in capsys.readouterr().err
