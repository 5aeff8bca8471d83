"""core where parts of the standard library are missing, as on Pyodide: no process pools
(``_multiprocessing``), no ``sqlite3`` until its package is loaded.

Each case runs a child Python whose import system refuses the module.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import core
from core.train import count

_BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"No module named {{name!r}} (blocked in this test)")
sys.meta_path.insert(0, _Block())
"""


def _run_blocked(blocked: tuple[str, ...], code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _BLOCK.format(blocked=blocked) + code],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


TEXTS = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"]


def test_training_falls_back_to_one_process_without_multiprocessing():
    code = f"""
import core
trainer = core.BPETrainer({TEXTS!r}, 270, num_workers=2)
vocab, merges = trainer.run()
assert merges == core.train_bpe({TEXTS!r}, 270)[1], merges
assert trainer.corpus_stats["workers"] == 1, trainer.corpus_stats
print(trainer.messages[0])
"""
    message = _run_blocked(("_multiprocessing",), code)
    assert "Counted in this one process, not 2 workers" in message
    assert "_multiprocessing" in message


def test_a_pool_that_cannot_start_counts_in_this_process(monkeypatch):
    """The same, in-process: process creation fails as it does on platforms without sem_open."""
    import multiprocessing

    def no_context(method=None):
        raise ImportError("This platform lacks a functioning sem_open implementation")

    monkeypatch.setattr(multiprocessing, "get_context", no_context)
    trainer = core.BPETrainer(TEXTS, 270, num_workers=3)
    _, merges = trainer.run()
    assert merges == core.train_bpe(TEXTS, 270)[1]
    assert trainer.corpus_stats["workers"] == 1
    assert any("not 3 workers" in m and "sem_open" in m for m in trainer.messages)
    _, stats = count.count_pretokens(TEXTS, num_workers=3)
    assert stats["workers"] == 1 and "sem_open" in stats["workers_note"]


def test_core_imports_without_sqlite3_and_the_library_says_what_is_missing(tmp_path):
    code = f"""
import sys
import core
assert "sqlite3" not in sys.modules
vocab, merges = core.train_bpe({TEXTS!r}, 270)
assert core.Tokenizer(vocab, merges).decode(core.Tokenizer(vocab, merges).encode("cat")) == "cat"
try:
    core.TokenizerLibrary({str(tmp_path / "lib")!r})
except core.LibraryError as err:
    print(err)
"""
    message = _run_blocked(("sqlite3", "_sqlite3"), code)
    assert message.startswith("the library needs sqlite3, which this Python lacks (Pyodide: load")
    assert not (tmp_path / "lib").exists()  # nothing created before the error


@pytest.mark.parametrize("blocked", [("regex", "_multiprocessing", "sqlite3", "_sqlite3")])
def test_core_works_with_everything_pyodide_lacks_blocked(blocked):
    code = f"""
import core
vocab, merges = core.train_bpe({TEXTS!r} * 2, 280, pattern="o200k", num_workers=2)
tok = core.Tokenizer(vocab, merges, pattern="o200k")
assert tok.decode(tok.encode("the cat, ünïcode 中文")) == "the cat, ünïcode 中文"
print(len(merges))
"""
    assert _run_blocked(blocked, code) == str(len(core.train_bpe(TEXTS * 2, 280, pattern="o200k")[1]))
