"""Benchmark core.train against rustbpe (nanochat's Rust trainer) and Hugging Face `tokenizers`.

Usage: python benchmarks/bench_train.py [--quick] [--repeat N]

Every trainer gets the same corpus file, the GPT-2 pre-tokenizer pattern, the same number of
merges and the same number of threads (worker processes for us, RAYON_NUM_THREADS for the
two Rust trainers). Times are wall-clock seconds from the file path to the trained merges,
best of N runs, interleaved so that a burst of load from elsewhere hits all three alike. Each
case runs in a fresh subprocess (RAYON_NUM_THREADS must be set before a thread pool starts).

rustbpe has no special tokens: it gets the documents split at ``<|endoftext|>`` (reading and
splitting the file is counted in its time) and one less in vocab_size, so all three learn the
same number of merges.

Our merge loop is the C one (tokplay_native.train) when it was built, else the pure one; the
last column says which ran. ``TOKPLAY_NATIVE=0`` measures the pure one.

The corpus is ../shared/corpora/docs-en.txt.gz (41 MB of English technical docs). Without
it, a stand-in is generated from the built-in corpus (Python docstrings, repeated with
numbered variations): it runs the same code, but its figures are not the reference ones.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpora" / "docs-en.txt.gz"
SPECIAL = "<|endoftext|>"
FULL_SIZE = 41_241_332  # bytes of docs-en.txt, the size the stand-in imitates


# ---------------------------------------------------------------------------------------
# The three trainers, from a file path to merges


def _ours(path: str, vocab_size: int, workers: int) -> dict[str, float]:
    from core import BPETrainer

    start = time.perf_counter()
    trainer = BPETrainer(path, vocab_size, [SPECIAL], num_workers=workers)
    trainer.run()
    wall = time.perf_counter() - start
    return {"s": wall, "counting": trainer.corpus_stats["seconds_counting"]}


def _rustbpe(path: str, vocab_size: int, workers: int) -> dict[str, float]:
    import rustbpe

    from core.engine.pretokenize import GPT2_PATTERN

    start = time.perf_counter()
    with open(path, encoding="utf-8") as fh:
        documents = fh.read().split(SPECIAL)
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(iter(documents), vocab_size - 1, pattern=GPT2_PATTERN)  # no special
    return {"s": time.perf_counter() - start}


def _hf(path: str, vocab_size: int, workers: int) -> dict[str, float]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    start = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([path], trainer)
    return {"s": time.perf_counter() - start}


TRAINERS: dict[str, Callable[[str, int, int], dict[str, float]]] = {
    "ours": _ours,
    "rustbpe": _rustbpe,
    "hf": _hf,
}


# ---------------------------------------------------------------------------------------
# Inside the subprocess


def _race(path: str, vocab_size: int, workers: int, repeat: int) -> dict[str, float]:
    """Best of ``repeat`` interleaved runs of the three trainers."""
    sys.path.insert(0, str(REPO))
    for name in TRAINERS:  # imports and thread pools start outside the timings
        __import__({"ours": "core", "rustbpe": "rustbpe", "hf": "tokenizers"}[name])
    from core import native
    best: dict[str, dict[str, float]] = {}
    for _ in range(repeat):
        for name, train in TRAINERS.items():
            result = train(path, vocab_size, workers)
            if name not in best or result["s"] < best[name]["s"]:
                best[name] = result
    out = {name: r["s"] for name, r in best.items()}
    out["ours_counting"] = best["ours"]["counting"]
    out["native"] = native.train is not None
    out["load"] = os.getloadavg()[0]
    return out


def _memory(path: str, vocab_size: int, workers: int, repeat: int) -> dict[str, float]:
    """Peak RSS of our training, all processes together (a separate run: the sampler costs)."""
    sys.path.insert(0, str(REPO))
    with _TreeRSS() as tree:
        _ours(path, vocab_size, workers)
    return {"rss_tree_mb": tree.peak / 2**20, "rss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _events(path: str, vocab_size: int, workers: int, repeat: int) -> dict[str, float]:
    """run() against iterating the event stream, interleaved, best of ``repeat``."""
    sys.path.insert(0, str(REPO))
    from core import BPETrainer

    plain, events = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        BPETrainer(path, vocab_size, [SPECIAL]).run()
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        for _event in BPETrainer(path, vocab_size, [SPECIAL]):
            pass
        events.append(time.perf_counter() - t)
    return {"plain": min(plain), "events": min(events)}


class _TreeRSS:
    """Peak total RSS of this process and all its descendants (pool workers, forkserver),
    sampled every 20 ms from /proc (Linux). ru_maxrss cannot see forkserver grandchildren."""

    def __init__(self) -> None:
        import threading

        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree_rss(self) -> int:
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        parents[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        tree = {os.getpid()}
        grew = True
        while grew:
            grew = False
            for pid, ppid in parents.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        total = 0
        for pid in tree:
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                pass
        return total

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._tree_rss())

    def __enter__(self) -> _TreeRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


CASES = {"race": _race, "memory": _memory, "events": _events}


def _run_case(kind: str, path: Path, vocab_size: int, workers: int, repeat: int) -> dict[str, float]:
    env = dict(os.environ, RAYON_NUM_THREADS=str(workers), TOKENIZERS_PARALLELISM="true" if workers > 1 else "false")
    cmd = [sys.executable, __file__, "--case", kind, str(path), str(vocab_size), str(workers), str(repeat)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"benchmark case {kind} on {path.name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------
# Corpora


def _corpora(tmp: Path) -> tuple[Path, str]:
    """The full corpus unpacked into ``tmp`` (or a generated stand-in), and where it came from."""
    full = tmp / "docs-en.txt"
    if CORPUS.is_file():
        with gzip.open(CORPUS, "rb") as src, open(full, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return full, f"{CORPUS.name} ({full.stat().st_size:,} bytes)"
    sys.path.insert(0, str(REPO))
    from core.train.builtin_corpus import builtin_corpus_documents

    docs = [d for d in builtin_corpus_documents() if d.strip()]
    rng = random.Random(0)
    written = 0
    with open(full, "w", encoding="utf-8") as fh:
        n = 0
        while written < FULL_SIZE:  # numbered variations, so that not every word repeats
            doc = rng.choice(docs).replace(" the ", f" the{n % 997} ", 3)
            written += fh.write(doc + SPECIAL)
            n += 1
    print(f"note: {CORPUS} not found; using a generated stand-in from the built-in corpus "
          "(same code paths, figures not comparable to the reference ones)\n")
    return full, f"a generated stand-in ({full.stat().st_size:,} bytes)"


def _prefix(full: Path, dest: Path, size: int) -> Path:
    with open(full, "rb") as fh:
        dest.write_bytes(fh.read(size).decode("utf-8", "ignore").encode("utf-8"))
    return dest


# ---------------------------------------------------------------------------------------
# Report


def _row(name: str, r: dict[str, float], target: str) -> str:
    vs_rust, vs_hf = r["ours"] / r["rustbpe"], r["ours"] / r["hf"]
    limit = float(target.split()[0])
    against = vs_rust if "rustbpe" in target else vs_hf
    ok = "ok" if against <= limit else "MISSED"
    return (f"{name:<44} {r['ours']:7.2f} {r['rustbpe']:8.2f} {r['hf']:7.2f} {vs_rust:8.2f} {vs_hf:6.2f}"
            f"  {'<= ' + target:<16} {ok:<6}   {r['load']:4.1f}  {'C' if r['native'] else 'pure'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 41 MB cases")
    parser.add_argument("--repeat", type=int, default=3, help="runs per trainer on 41 MB (best of; default 3)")
    parser.add_argument("--case", nargs=5, metavar=("KIND", "PATH", "VOCAB", "WORKERS", "REPEAT"), help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.case:
        kind, path, vocab, workers, repeat = ns.case
        print(json.dumps(CASES[kind](path, int(vocab), int(workers), int(repeat))))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_train_"))
    try:
        full, source = _corpora(tmp)
        small = _prefix(full, tmp / "small-133k.txt", 133_000)
        medium = _prefix(full, tmp / "medium-2m.txt", 2_000_000)
        print(f"corpus: {source}; GPT-2 pattern; wall-clock seconds, best of n, interleaved; "
              f"{os.cpu_count()} CPUs")
        print(f"{'case':<44} {'ours':>7} {'rustbpe':>8} {'HF':>7} {'/rustbpe':>8} {'/HF':>6}  {'target':<16} {'':<6}   load  loop")
        rows = [
            ("133 KB, vocab 500, 1 thread (best of 9)", _run_case("race", small, 500, 1, 9), "1.0 x HF"),
            ("2 MB, vocab 3,000, 1 thread (best of 5)", _run_case("race", medium, 3000, 1, 5), "1.0 x HF"),
        ]
        for name, r, target in rows:
            print(_row(name, r, target), flush=True)
        if not ns.quick:
            r = _run_case("race", full, 10_000, 2, ns.repeat)
            print(_row(f"41 MB, vocab 10,000, 2 threads (best of {ns.repeat})", r, "1.0 x rustbpe"))
            merging = r["ours"] - r["ours_counting"]
            print(f"{'':<44} ours: {r['ours_counting']:.2f} s counting pre-tokens, {merging:.2f} s merging")
            m = _run_case("memory", full, 10_000, 2, 1)
            print(f"{'':<44} our peak RSS, all processes: {m['rss_tree_mb']:.0f} MB (target <= 250); "
                  f"main process {m['rss_self_mb']:.0f} MB")
        e = _run_case("events", medium, 3000, 1, 5)
        cost = e["events"] / e["plain"] - 1
        print(f"event stream against run(), 2 MB, vocab 3,000: {e['events']:.2f} s vs {e['plain']:.2f} s, "
              f"{cost:+.1%} (target <= +5%) {'ok' if cost <= 0.05 else 'MISSED'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
