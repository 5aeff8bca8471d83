"""Corpus encoding for training: our ``tokplay encode FILE --out ids.npy --workers 2`` against
tiktoken's ``encode_ordinary_batch(docs, num_threads=2)`` on a 60 MB file, IDs compared.

    .venv/bin/python benchmarks/bench_encode_corpus.py                # 60 MB, gpt2, best of 3
    .venv/bin/python benchmarks/bench_encode_corpus.py --mb 20 --encoding cl100k_base --repeat 1

The file: docs-en (41 MB of English technical documents) and docs-multi (2.8 MB of Chinese,
Japanese, Korean and Italian), then docs-en again up to ``--mb`` megabytes, cut at a document
boundary; documents joined by ``<|endoftext|>`` as in the shared corpora.

How the two sides are made comparable: each is the whole job, file in and ``.npy`` out, in
a fresh Python process timed from outside (start-up and loading the tokenizer included):

- ours: ``python -m core encode -t gpt2 corpus.txt --out ids.npy --workers 2 --quiet``;
- tiktoken (:data:`TIKTOKEN_JOB`): ``get_encoding``, read and decode the file, split it into
  documents at ``<|endoftext|>``, ``encode_ordinary_batch(docs, num_threads=2)``, join the
  documents' IDs with the end-of-text ID (exactly ``encode(text, allowed_special="all")``,
  checked here) into a uint16 array (uint32 past 65,536 IDs) and ``np.save`` it.

Each side runs ``--repeat`` times, interleaved, best time kept (the machine is shared: compare
the ratio of one run; the CPU seconds, its processes' and threads' together, are less
disturbed by other load than the wall clock). The two ``.npy`` files must be equal, element
for element.
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO.parent / "shared" / "corpora"
CACHE = REPO.parent / "shared" / "tiktoken-cache"
SEPARATOR = "<|endoftext|>"


def build_corpus(path: Path, megabytes: float) -> int:
    """Write the benchmark file (see the module docstring), streamed so that this process stays
    small (a child's peak RSS starts from its parent's); its size in bytes."""
    sep = SEPARATOR.encode()
    target = int(megabytes * 1_000_000)
    with open(path, "w+b") as out:
        for name in ("docs-en.txt.gz", "docs-multi.txt.gz", "docs-en.txt.gz"):
            if out.tell():
                out.write(sep)
            with gzip.open(CORPORA / name, "rb") as fh:
                while out.tell() < target and (chunk := fh.read(1 << 20)):
                    out.write(chunk)
        if out.tell() > target:  # cut after the last whole document
            start = max(0, target - (4 << 20))
            out.seek(start)
            out.truncate(start + out.read(target - start).rfind(sep))
    return path.stat().st_size


#: tiktoken's side, run as ``python -c TIKTOKEN_JOB CORPUS OUT ENCODING THREADS``.
TIKTOKEN_JOB = """
import sys
import numpy as np
import tiktoken

corpus, out, encoding, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
enc = tiktoken.get_encoding(encoding)
with open(corpus, "rb") as fh:
    docs = fh.read().decode("utf-8").split("<|endoftext|>")
batches = enc.encode_ordinary_batch(docs, num_threads=threads)
dtype = np.uint16 if enc.n_vocab <= 1 << 16 else np.uint32
ids = np.empty(sum(map(len, batches)) + len(batches) - 1, dtype=dtype)
pos = 0
for i, doc_ids in enumerate(batches):
    if i:
        ids[pos] = enc.eot_token
        pos += 1
    ids[pos : pos + len(doc_ids)] = doc_ids
    pos += len(doc_ids)
np.save(out, ids)
"""


def timed(command: list[str]) -> tuple[float, float, int]:
    """Run ``command`` in a fresh process: (wall seconds, CPU seconds of it and its children,
    peak RSS in bytes of the largest of them)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
                                 env={**os.environ, "PYTHONPATH": str(REPO)})
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            sys.exit(f"{command[:3]} failed: {err.read().decode(errors='replace').strip()[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def run_ours(corpus: Path, out: Path, encoding: str, workers: int) -> tuple[float, float, int]:
    return timed([sys.executable, "-m", "core", "encode", "-t", encoding, str(corpus), "--out",
                  str(out), "--workers", str(workers), "--quiet"])


def run_tiktoken(corpus: Path, out: Path, encoding: str, threads: int) -> tuple[float, float, int]:
    return timed([sys.executable, "-c", TIKTOKEN_JOB, str(corpus), str(out), encoding, str(threads)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=60.0, help="size of the file (default 60 MB)")
    parser.add_argument("--encoding", default="gpt2", help="gpt2, cl100k_base or o200k_base")
    parser.add_argument("--workers", type=int, default=2, help="our workers and tiktoken's threads")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side; the best is kept")
    args = parser.parse_args()
    if not (CORPORA / "docs-en.txt.gz").exists():
        print(f"skipped: the shared corpora are not at {CORPORA} (../shared from the project)")
        return
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(CACHE))
    with tempfile.TemporaryDirectory() as tmp:
        corpus, ours_out, theirs_out = Path(tmp, "corpus.txt"), Path(tmp, "ours.npy"), Path(tmp, "tiktoken.npy")
        size = build_corpus(corpus, args.mb)
        ours, theirs = [], []
        for _ in range(args.repeat):
            ours.append(run_ours(corpus, ours_out, args.encoding, args.workers))
            theirs.append(run_tiktoken(corpus, theirs_out, args.encoding, args.workers))
        import numpy as np  # (only now: this process stays small while the others run)
        import tiktoken

        a, b = np.load(ours_out), np.load(theirs_out)
        equal = a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
        whole = tiktoken.get_encoding(args.encoding).encode(corpus.read_text(encoding="utf-8"),
                                                            allowed_special="all")
        joined_is_whole = len(whole) == len(b) and bool((np.asarray(whole, dtype=b.dtype) == b).all())
    mb = size / 1e6
    print(f"{args.encoding}, {mb:.1f} MB, {args.workers} workers / threads, best of {args.repeat} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")
    for name, runs in ((f"tokplay encode --workers {args.workers}", ours),
                       ("tiktoken encode_ordinary_batch", theirs)):
        wall, cpu, rss = min(runs)
        print(f"  {name:<32} {wall:6.2f} s  {mb / wall:6.2f} MB/s  CPU {cpu:6.2f} s  peak RSS "
              f"{max(r for _, _, r in runs) / 1e6:4.0f} MB  (runs: {', '.join(f'{w:.2f}' for w, _, _ in runs)})")
    print(f"  throughput ratio (ours / tiktoken): {min(theirs)[0] / min(ours)[0]:.2f}x "
          f"(CPU time ratio: {min(theirs)[1] / min(ours)[1]:.2f}x)")
    print(f"  IDs equal: {equal} ({len(a):,} IDs); tiktoken's joined batch equals "
          f"encode(text, allowed_special='all'): {joined_is_whole}")


if __name__ == "__main__":
    main()
