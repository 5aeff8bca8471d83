"""Benchmark core.train against Hugging Face `tokenizers` (BpeTrainer + ByteLevel pre-tokenizer).

Usage: python benchmarks/bench_train.py [--quick]

Times are the best of several interleaved runs (9 for the small case, 2 for the big one).
Each case runs in a fresh subprocess, with RAYON_NUM_THREADS set for `tokenizers` (it must
be set before its thread pool starts); ours and theirs then run in that same process, ours
first so that its peak memory (ru_maxrss of the process and of its pool workers) is read
before `tokenizers` allocates anything. The machine may be shared: compare the ratios.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpora" / "docs-en.txt.gz"
SPECIAL = "<|endoftext|>"


def _hf_train(path: str, vocab_size: int, specials: list[str]) -> float:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    start = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([path], trainer)
    return time.perf_counter() - start


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


def _ours(path: str, vocab_size: int, specials: list[str], workers: int) -> float:
    from core import train_bpe

    start = time.perf_counter()
    train_bpe(path, vocab_size, specials, num_workers=workers)
    return time.perf_counter() - start


def _case(args: argparse.Namespace) -> None:
    """Runs inside the subprocess: prints one JSON line."""
    sys.path.insert(0, str(REPO))
    specials = [SPECIAL] if args.special else []
    result: dict[str, float] = {}
    if args.kind == "train":
        from core import BPETrainer

        ours, hf, ours_cpu, hf_cpu = [], [], [], []
        for _ in range(args.repeat):  # interleaved, so a burst of load hits both sides
            start, cpu = time.perf_counter(), time.process_time()
            trainer = BPETrainer(args.path, args.vocab, specials, num_workers=args.workers)
            trainer.run()
            ours.append(time.perf_counter() - start)
            ours_cpu.append(time.process_time() - cpu)
            cpu = time.process_time()
            hf.append(_hf_train(args.path, args.vocab, specials))
            hf_cpu.append(time.process_time() - cpu)
        result["ours"], result["hf"] = min(ours), min(hf)
        # CPU seconds of this process (all its threads): comparable only with 1 thread/process
        result["ours_cpu"], result["hf_cpu"] = min(ours_cpu), min(hf_cpu)
        result["counting"] = trainer.corpus_stats["seconds_counting"]
    elif args.kind == "memory":  # a separate run: the /proc sampler would skew the timing
        with _TreeRSS() as tree:
            _ours(args.path, args.vocab, specials, args.workers)
        result["rss_tree_mb"] = tree.peak / 2**20
        result["rss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    else:  # events: run() vs iterating events, interleaved, best of n
        from core import BPETrainer

        plain, events = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            BPETrainer(args.path, args.vocab, specials).run()
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            for _event in BPETrainer(args.path, args.vocab, specials):
                pass
            events.append(time.perf_counter() - t)
        result["plain"], result["events"] = min(plain), min(events)
    print(json.dumps(result))


def _run_case(threads: int, *case_args: object) -> dict[str, float]:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true" if threads > 1 else "false")
    cmd = [sys.executable, __file__, "--case", *map(str, case_args)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the 41 MB case")
    parser.add_argument("--case", nargs=6, metavar=("KIND", "PATH", "VOCAB", "SPECIAL", "WORKERS", "REPEAT"))
    ns = parser.parse_args()
    if ns.case:
        kind, path, vocab, special, workers, repeat = ns.case
        _case(argparse.Namespace(kind=kind, path=path, vocab=int(vocab), special=special == "1",
                                 workers=int(workers), repeat=int(repeat)))  # fmt: skip
        return
    if not CORPUS.is_file():
        sys.exit(f"benchmark corpus not found at {CORPUS}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_train_"))
    try:
        full = tmp / "docs-en.txt"
        with gzip.open(CORPUS, "rb") as src, open(full, "wb") as dst:
            shutil.copyfileobj(src, dst)
        small = tmp / "docs-en-133k.txt"
        small.write_bytes(full.read_bytes()[:133_000].decode("utf-8", "ignore").encode("utf-8"))
        medium = tmp / "docs-en-2m.txt"
        with open(full, "rb") as fh:
            medium.write_bytes(fh.read(2_000_000).decode("utf-8", "ignore").encode("utf-8"))

        rows = []
        r1 = _run_case(1, "train", small, 500, 1, 1, 9)
        cpu = f"CPU seconds (less sensitive to a shared machine): ours {r1['ours_cpu']:.3f}, HF {r1['hf_cpu']:.3f}, "
        cpu += f"ratio {r1['ours_cpu'] / r1['hf_cpu']:.2f}"
        rows.append(("vocab 500 + 1 special, first 133 KB, 1 thread/process", r1["ours"], r1["hf"], 1.5, cpu))
        if not ns.quick:
            r2 = _run_case(2, "train", full, 10_000, 1, 2, 2)
            r2.update(_run_case(2, "memory", full, 10_000, 1, 2, 1))
            mem = (
                f"peak RSS, all processes together: {r2['rss_tree_mb']:.0f} MB (target <= 250); "
                f"main process alone {r2['rss_self_mb']:.0f} MB"
            )
            split = f"ours: {r2['counting']:.1f} s counting pre-tokens, {r2['ours'] - r2['counting']:.1f} s merging"
            rows.append(("vocab 10,000, whole 41 MB, 2 threads/processes", r2["ours"], r2["hf"], 1.0, split))
            rows.append(("", 0.0, 0.0, 0.0, mem))
        r3 = _run_case(1, "events", medium, 3000, 1, 1, 7)

        print(f"{'case (wall-clock seconds, best of n)':<55} {'ours s':>8} {'HF s':>8} {'ratio':>6} {'target':>7}")
        for name, ours, hf, target, note in rows:
            if not name:
                print(f"{'':<55} {note}")
                continue
            ok = "ok" if ours / hf <= target else "MISSED"
            print(f"{name:<55} {ours:8.2f} {hf:8.2f} {ours / hf:6.2f} {'<=' + str(target):>7} {ok}")
            if note:
                print(f"{'':<55} {note}")
        cost = r3["events"] / r3["plain"] - 1
        print(
            f"{'event stream, vocab 3,000 on 2 MB: run() vs iterating':<55} {r3['events']:8.2f} "
            f"{r3['plain']:8.2f} {cost:+6.1%} {'<=5%':>7} {'ok' if cost <= 0.05 else 'MISSED'}"
            "  (columns: events s, run() s, extra cost)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
