"""Trainings on files where they lie (training.inputs.CorpusSource), through the server's
training manager: a server corpus is read in place (never copied, never deleted), a Hugging Face
dataset file is downloaded by the worker with its progress reported, a Stop while it downloads
ends the job at once, and a message about a file names it as the page does, not by its path.

The Hub is the local stand-in (tests/hub_stub.py); no test reaches the internet.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

# subtle: imported now, online (see tests/test_corpus_sources.py)
import huggingface_hub.constants  # noqa: F401
import pytest

from core.train import train_bpe
from tests.hub_stub import HubStub, Repo, _Handler
from training.inputs import CorpusSource
from training.manager import TrainingManager

pytestmark = pytest.mark.xdist_group("jobs")  # worker processes: keep these on one xdist worker

SPECIALS = ["<|endoftext|>"]
REPO = "stub-org/stories"
TEXT = ("Once upon a time a small cat sat on a warm mat.<|endoftext|>"
        "The dog ran after the ball and the cat watched.<|endoftext|>") * 400
STALLED = "big.txt"  # the stub sends two thirds of it, then waits until the test ends
#: (more than huggingface_hub's 10 MiB read, so some progress is reported before the stall)
STALLED_BYTES = b"words and more words " * 1_200_000
_ENV = ("HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
        "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


class _StallingHandler(_Handler):
    """Sends two thirds of :data:`STALLED`'s bytes, then holds the connection until released."""

    release = threading.Event()

    def _send(self, status: int, headers: dict[str, str], data: bytes, body: bool) -> None:
        if not (body and status == 200 and self.path.endswith("/" + STALLED)):
            return super()._send(status, headers, data, body)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) * 2 // 3])
        self.wfile.flush()
        self.release.wait(120)


@pytest.fixture(scope="module")
def stub() -> Iterator[HubStub]:
    server = HubStub({}, datasets={REPO: Repo({"train.txt": TEXT.encode(),
                                               STALLED: STALLED_BYTES})})
    server.RequestHandlerClass = _StallingHandler
    server.start()
    yield server
    _StallingHandler.release.set()
    server.stop()


@pytest.fixture
def manager(stub: HubStub, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[TrainingManager]:
    """A manager whose workers (spawned after the settings) talk to the stub."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", stub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    m = TrainingManager(max_concurrent=2, prewarm=False)
    yield m
    m.shutdown()


def wait_for(check: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_a_server_corpus_is_read_in_place_and_left_there(manager, tmp_path):
    corpus = tmp_path / "shared" / "stories.txt"
    corpus.parent.mkdir()
    corpus.write_text(TEXT)
    source = CorpusSource((str(corpus),), size=corpus.stat().st_size,
                          names={str(corpus): "stories.txt"})
    snap = manager.wait(manager.submit(source, vocab_size=300, special_tokens=SPECIALS,
                                       corpus_name="stories.txt"), timeout=120)
    assert snap.status == "finished", snap.error
    assert (snap.vocab, snap.merges) == train_bpe(str(corpus), 300, SPECIALS)
    assert snap.corpus_bytes == corpus.stat().st_size and snap.corpus_name == "stories.txt"
    assert corpus.read_text() == TEXT  # still there: the manager deletes only its own files
    assert list(Path(manager._tmpdir).iterdir()) == []  # and it wrote no copy


def test_a_message_about_a_server_corpus_names_it_not_its_path(manager, tmp_path):
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes(b"plain words " * 1000 + "café".encode("latin-1"))
    source = CorpusSource((str(corpus),), size=corpus.stat().st_size,
                          names={str(corpus): "books/latin1.txt"})
    snap = manager.wait(manager.submit(source, vocab_size=300, special_tokens=SPECIALS), 120)
    assert snap.status == "failed"
    assert snap.error.startswith("books/latin1.txt is not valid UTF-8: bad byte(s) e9 at byte "
                                 "offset 12003"), snap.error
    assert str(tmp_path) not in snap.error


def test_a_hub_dataset_file_downloads_in_the_worker_then_trains(manager, stub, tmp_path):
    url = f"hf://datasets/{REPO}/train.txt"
    job = manager.submit(CorpusSource((url,)), vocab_size=300, special_tokens=SPECIALS,
                         corpus_name=f"{REPO}/train.txt")
    snap = manager.wait(job, timeout=120)
    assert snap.status == "finished", snap.error
    assert snap.download == (len(TEXT), len(TEXT))  # its bytes, reported as they came
    reference = tmp_path / "train.txt"
    reference.write_text(TEXT)
    assert (snap.vocab, snap.merges) == train_bpe(str(reference), 300, SPECIALS)
    assert snap.corpus_bytes == len(TEXT)  # learned while counting: unknown at submit


def test_a_missing_dataset_file_fails_in_one_line(manager, stub):
    snap = manager.wait(manager.submit(CorpusSource((f"hf://datasets/{REPO}/nope.txt",)),
                                       vocab_size=300), timeout=120)
    assert snap.status == "failed" and "\n" not in snap.error
    assert snap.error.startswith(f"hf://datasets/{REPO}/nope.txt names no file of the dataset "
                                 f"{REPO}; it has: {STALLED}, train.txt")


def test_a_stop_while_downloading_ends_the_job_at_once(manager, stub):
    job = manager.submit(CorpusSource((f"hf://datasets/{REPO}/{STALLED}",)), vocab_size=300,
                         special_tokens=SPECIALS)
    wait_for(lambda: (manager.snapshot(job).download or (0, 0))[0] > 0)
    snap = manager.snapshot(job)
    assert snap.status == "downloading" and 0 < snap.download[0] < snap.download[1]
    manager.stop(job, shown=0)  # the stub holds the rest back: only ending the worker ends it
    snap = manager.wait(job, timeout=10)
    assert snap.status == "stopped" and snap.merges == [] and len(snap.vocab) == 257
    assert snap.corpus_bytes == len(STALLED_BYTES)  # the download's size: nothing was counted
    assert snap.messages[-1].startswith("Stopped by request while downloading the corpus: no "
                                        "merge was learned (vocab 257")
