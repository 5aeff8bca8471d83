"""Benchmark core.train against rustbpe (nanochat's Rust trainer) and Hugging Face `tokenizers`.

Usage: python benchmarks/bench_train.py [--quick] [--repeat N] [--sizes 250M,1G,2G [--big-dir DIR]]

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

``--sizes 250M,1G,2G``: the big-corpus table instead, vocab 10,000 and 2 workers/threads. Each
size is a file of docs-en copies with a new lexicon per copy (:mod:`big_corpus`: distinct
pre-tokens grow with the size, as in a real big corpus), written to ``--big-dir`` (default: a
temporary folder; an existing file of that name is reused: the same size gives the same
bytes). Each trainer runs as its own process, timed from outside with the peak RSS of its
whole process tree (workers included) sampled every 20 ms: ours is the command line as a
user runs it (``python -m core train FILE --vocab-size 10000 --workers 2 ...``). The three
run interleaved, size by size; compare the ratios of one run (the machine may be shared).
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

    def __init__(self, root: int | None = None) -> None:
        import threading

        self.root = os.getpid() if root is None else root
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
        tree = {self.root}
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


# ---------------------------------------------------------------------------------------
# Big corpora: time and peak memory of the whole process tree, each trainer its own process


def _measured(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> dict[str, float]:
    """Run ``cmd``; its wall-clock seconds, CPU seconds (its processes and the workers they
    waited for: what the machine's other load does not stretch) and the peak RSS (MB) of its
    process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with _TreeRSS(proc.pid) as tree:
        _, err = proc.communicate()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{err.decode(errors='replace')[-3000:]}")
    return {"s": seconds, "cpu": cpu, "mb": tree.peak / 2**20}


def _big_commands(name: str, path: Path, out: Path, vocab_size: int, workers: int) -> list[str]:
    if name == "ours":  # the command line, as a user runs it
        return [sys.executable, "-m", "core", "train", str(path), "--vocab-size", str(vocab_size),
                "--workers", str(workers), "--special-token", SPECIAL, "--out", str(out), "--quiet"]
    return [sys.executable, __file__, "--train", name, str(path), str(vocab_size), str(workers)]


def _big_run(name: str, path: Path, out: Path, env: dict[str, str], base: Path | None) -> dict[str, float]:
    """One trainer on one big file; ``base``: ours from another checkout (the "before")."""
    if name == "base":  # subtle: `python -m` looks in the working folder first
        env = dict(env, PYTHONPATH=os.pathsep.join([str(base), env["PYTHONPATH"]]))
        return _measured(_big_commands("ours", path, out, 10_000, 2), env, cwd=base)
    return _measured(_big_commands(name, path, out, 10_000, 2), env, cwd=REPO)


def _read_through(path: Path) -> None:
    """Read ``path`` once, so the trainer timed next finds it in the page cache as the one
    before it did: otherwise the first trainer of a round pays the disk for everyone (a 1 GB
    file took ours from 14 s to 44 s, and rustbpe's run after it found the file warm)."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def _big_table(sizes: list[str], big_dir: Path, out: Path, repeat: int, names: list[str],
               base: Path | None) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from big_corpus import parse_size, write_corpus

    vocab_size, workers = 10_000, 2  # (as _big_run runs them)
    env = dict(os.environ, RAYON_NUM_THREADS=str(workers), TOKENIZERS_PARALLELISM="true",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    print(f"docs-en copies, a new lexicon per copy (benchmarks/big_corpus.py); vocab {vocab_size:,}, "
          f"{workers} workers/threads; seconds and peak MB of the whole process tree, best of {repeat}, "
          f"interleaved; {os.cpu_count()} CPUs")
    print(f"{'size':<6} {'trainer':<8} {'seconds':>8} {'ours/this':>10} {'CPU s':>8} {'ours/this':>10}"
          f" {'peak MB':>8}  load")
    for size in sizes:
        path = big_dir / f"big-{size}.txt"
        if not path.is_file():
            write_corpus(path, parse_size(size))
        best: dict[str, dict[str, float]] = {}
        for _ in range(repeat):
            for name in names:
                _read_through(path)  # every trainer starts with the file in the page cache
                r = _big_run(name, path, out, env, base)
                if name not in best or r["s"] < best[name]["s"]:
                    best[name] = r
        for name in names:
            r = best[name]
            ours = best["ours"]
            print(f"{size:<6} {name:<8} {r['s']:8.1f} {ours['s'] / r['s']:10.3f} {r['cpu']:8.1f}"
                  f" {ours['cpu'] / r['cpu']:10.3f} {r['mb']:8.0f}  {os.getloadavg()[0]:4.1f}", flush=True)
    print("targets at 1G: ours <= 0.15 x rustbpe's time (ours/this), ours <= 800 MB")


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
    parser.add_argument("--repeat", type=int, help="runs per trainer (best of; default 3 on 41 MB, 1 with --sizes)")
    parser.add_argument("--sizes", help="the big-corpus table at these sizes instead (e.g. 250M,1G,2G)")
    parser.add_argument("--big-dir", type=Path, help="where the big corpora are written (and reused)")
    parser.add_argument("--trainers", default="ours,rustbpe,hf", help="with --sizes: which ones, in this order "
                        "(ours,rustbpe,hf; 'base' runs ours from --base)")
    parser.add_argument("--base", type=Path, help="with --sizes: another checkout, run as 'base' (the before)")
    parser.add_argument("--case", nargs=5, metavar=("KIND", "PATH", "VOCAB", "WORKERS", "REPEAT"), help=argparse.SUPPRESS)
    parser.add_argument("--train", nargs=4, metavar=("NAME", "PATH", "VOCAB", "WORKERS"), help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.train:
        name, path, vocab, workers = ns.train
        TRAINERS[name](path, int(vocab), int(workers))
        return
    if ns.case:
        kind, path, vocab, workers, repeat = ns.case
        print(json.dumps(CASES[kind](path, int(vocab), int(workers), int(repeat))))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_train_"))
    if ns.sizes:
        try:
            names = ns.trainers.split(",")
            names = names if "ours" in names else ["ours", *names]  # the ratios are to ours
            _big_table(ns.sizes.split(","), ns.big_dir or tmp, tmp / "out", ns.repeat or 1, names, ns.base)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    ns.repeat = ns.repeat or 3
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
