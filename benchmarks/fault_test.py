"""Fault test: kill training workers mid-run, and kill "the server" in the middle of saves.

Part A, training workers: a ``TrainingManager`` like the server's (2 at once) trains 4 MB of
../shared/corpora/docs-en (else the built-in corpus) to vocab 50,000, a quarter of the jobs
paused; after a random delay of 0-3 s (a training takes ~5 s: starting, counting, merging or
paused) the worker gets SIGKILL (its pid from the job snapshot). Each killed job must end "failed" with the
"stopped unexpectedly ... SIGKILL" message, and a probe job submitted right after must finish:
the manager keeps serving. (The Train page showing the message is tests/test_faults.py.)

Part B, the library: ``--writers`` child processes each open the library and save toy
tokenizers in a loop (deleting one of their own now and then), printing each save or delete
once it has returned; after a random delay they get SIGKILL, mid-save or not. Then the library
is reopened (= the server restarting) and checked: every listed entry loads and validates
(content hash), no temp file and no blob without a row remain, every save that returned is
still there unless it was deleted, and at most the in-flight save of each writer appeared
without having returned.

Prints a summary and exits 1 on any inconsistency. Bounded: ``--rounds`` / ``--kills`` and a
wall-clock cap (``--max-seconds``).

    .venv/bin/python benchmarks/fault_test.py [--kills 10] [--rounds 150] [--writers 2]
"""

from __future__ import annotations

import argparse
import gzip
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.train.builtin_corpus import builtin_corpus_text  # noqa: E402
from core.services.library import TokenizerLibrary  # noqa: E402
from training.manager import TrainingManager  # noqa: E402

SPECIALS = ["<|endoftext|>"]
DOCS_EN = REPO.parent / "shared" / "corpora" / "docs-en.txt.gz"


# ---- part A: training workers ------------------------------------------------------------


def victim_corpus(megabytes: float) -> tuple[str, str]:
    """A corpus that trains for a while: a docs-en slice, else the built-in corpus."""
    if DOCS_EN.is_file() and megabytes > 0:
        with gzip.open(DOCS_EN, "rb") as fh:
            data = fh.read(int(megabytes * 1024 * 1024))
        return data.decode("utf-8", errors="ignore"), f"{megabytes:g} MB of docs-en"
    return builtin_corpus_text(), "the built-in corpus"


def kill_workers(kills: int, rng: random.Random, deadline: float,
                 corpus: str) -> tuple[dict[str, int], list[str]]:
    probe_text = builtin_corpus_text()[:60_000]
    counts = {"kills": 0, "failed with message": 0, "finished before the kill": 0,
              "probe jobs finished": 0}
    phases: dict[str, int] = {}
    problems: list[str] = []
    manager = TrainingManager(max_concurrent=2)
    manager.warm_up()
    try:
        for k in range(kills):
            if time.monotonic() > deadline:
                problems.append(f"part A stopped after {k} kills: time cap reached")
                break
            job = manager.submit(corpus, vocab_size=50_000, special_tokens=SPECIALS,
                                 corpus_name=f"victim {k}")
            pause = rng.random() < 0.25
            if pause:
                manager.pause(job)
            time.sleep(rng.uniform(0.0, 3.0))
            snap = manager.snapshot(job)
            while snap.pid is None and not snap.done:  # still queued: wait for its worker
                time.sleep(0.02)
                snap = manager.snapshot(job)
            if snap.done:
                counts["finished before the kill"] += 1
                if snap.status != "finished":
                    problems.append(f"job {k} ended before the kill: {snap.status} {snap.error!r}")
                continue
            phase = snap.status + (" (pause asked)" if pause and snap.status != "paused" else "")
            phases[phase] = phases.get(phase, 0) + 1
            os.kill(snap.pid, signal.SIGKILL)  # type: ignore[arg-type]
            counts["kills"] += 1
            snap = manager.wait(job, timeout=60)
            error = snap.error or ""
            if snap.status == "failed" and "stopped unexpectedly" in error and "SIGKILL" in error:
                counts["failed with message"] += 1
            else:
                problems.append(f"kill {k} ({phase}): status {snap.status!r}, error {error!r}")
            probe = manager.wait(manager.submit(probe_text, vocab_size=300,
                                                special_tokens=SPECIALS), timeout=120)
            if probe.status == "finished" and probe.merges and len(probe.merges) == 300 - 257:
                counts["probe jobs finished"] += 1
            else:
                problems.append(f"probe after kill {k}: {probe.status!r} {probe.error!r}")
            manager.forget(job)
            manager.forget(probe.job_id)
    finally:
        manager.shutdown()
    for phase, n in sorted(phases.items()):
        counts[f"  killed while {phase}"] = n
    return counts, problems


# ---- part B: the library -----------------------------------------------------------------

# argv: root, first seed, merges per tokenizer. Prints "ready", then "saved ID" / "deleting ID"
# / "deleted ID" as each operation returns, until killed.
_WRITER = textwrap.dedent(
    """
    import random, sys
    from core.services.library import TokenizerLibrary

    root, seed, n_merges = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lib = TokenizerLibrary(root)
    print("ready", flush=True)
    mine = []
    rng = random.Random(seed)
    while True:
        if mine and rng.random() < 0.2:
            victim = mine.pop(rng.randrange(len(mine)))
            print("deleting", victim, flush=True)
            lib.delete(victim)
            print("deleted", victim, flush=True)
            continue
        vocab = {i: bytes([i]) for i in range(256)}
        merges = []
        for k in range(n_merges):
            a, b = vocab[rng.randrange(len(vocab))], vocab[rng.randrange(len(vocab))]
            vocab[256 + k] = a + b
            merges.append((a, b))
        entry = lib.save(vocab, merges, name=f"toy {seed}", corpus_name="toy", corpus_size=seed)
        mine.append(entry.id)
        print("saved", entry.id, flush=True)
    """
)


def library_round(root: Path, writers: int, seed_base: int, n_merges: int, delay: float,
                  state: dict[str, set[str]]) -> tuple[dict[str, int], list[str]]:
    """One round: start writers, kill them, reopen and check. ``state`` carries what returned."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(root), str(seed_base + w), str(n_merges)],
                         cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(writers)
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            proc.kill()
            raise RuntimeError(f"writer did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    time.sleep(delay)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
    stats = {"in-flight deletes": 0}
    problems: list[str] = []
    for proc in procs:
        # subtle: read through the same buffered file as readline() above (communicate()
        # reads the raw pipe and would miss lines that readline() already buffered)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=30)
        if proc.returncode != -signal.SIGKILL:
            problems.append(f"writer exited with {proc.returncode} before the kill: {err[-500:]}")
        for line in out.splitlines():
            kind, _, entry_id = line.partition(" ")
            if kind == "saved":
                state["returned"].add(entry_id)
                state["deleted"].discard(entry_id)
            elif kind == "deleting":
                state["maybe_deleted"].add(entry_id)
            elif kind == "deleted":
                state["maybe_deleted"].discard(entry_id)
                state["deleted"].add(entry_id)
                state["returned"].discard(entry_id)
    stats["in-flight deletes"] = len(state["maybe_deleted"])
    blob_dir = root / "blobs"
    stats["temp files found"] = sum(p.name.startswith(".tmp-") for p in blob_dir.iterdir())
    stats["blob files before reopen"] = sum(p.suffix == ".json" for p in blob_dir.iterdir())

    lib = TokenizerLibrary(root)  # the restart: recovery runs here
    listed = {e.id for e in lib.list()}
    files = list(blob_dir.iterdir())
    if lib.problems:
        problems.extend(lib.problems)
    if any(p.name.startswith(".") for p in files):
        problems.append("temp files left after reopening")
    if {p.stem for p in files} != listed:
        problems.append(f"blobs {sorted(p.stem for p in files)} != rows {sorted(listed)}")
    # subtle: loading every entry every round grows quadratically; an entry is loaded (hash
    # and shape checked) when it first appears, and all of them again at the very end
    for entry_id in sorted(listed - state["verified"]):
        try:
            lib.load(entry_id)
        except Exception as exc:  # noqa: BLE001 - any failure here is the finding
            problems.append(f"entry {entry_id} does not load: {exc}")
        else:
            state["verified"].add(entry_id)
    expected = state["returned"] - state["maybe_deleted"]
    lost = expected - listed
    resurrected = (state["deleted"] - state["maybe_deleted"]) & listed
    unconfirmed = listed - state["returned"] - state["maybe_deleted"]
    if lost:
        problems.append(f"lost entries: {sorted(lost)}")
    if resurrected:
        problems.append(f"deleted entries back: {sorted(resurrected)}")
    if len(unconfirmed) > writers:
        problems.append(f"{len(unconfirmed)} entries nobody saved: {sorted(unconfirmed)}")
    # an in-flight save that did commit is a complete entry: adopt it; settle in-flight deletes
    state["returned"] |= unconfirmed
    for entry_id in state["maybe_deleted"]:
        if entry_id in listed:  # killed before the delete committed: still saved
            state["returned"].add(entry_id)
        else:
            state["returned"].discard(entry_id)
            state["deleted"].add(entry_id)
    state["maybe_deleted"].clear()
    stats["lost"] = len(lost)
    stats["in-flight saves kept"] = len(unconfirmed)
    stats["orphan blobs removed"] = stats["blob files before reopen"] - len(listed)
    stats["entries"] = len(listed)
    return stats, problems


def kill_saves(rounds: int, writers: int, n_merges: int, rng: random.Random,
               deadline: float) -> tuple[dict[str, int], list[str]]:
    totals = {"rounds": 0, "writers killed": 0, "consistent reopenings": 0, "lost": 0,
              "in-flight saves kept": 0, "in-flight deletes": 0, "temp files found": 0,
              "orphan blobs removed": 0}
    problems: list[str] = []
    state: dict[str, set[str]] = {"returned": set(), "deleted": set(), "maybe_deleted": set(),
                                  "verified": set()}
    with tempfile.TemporaryDirectory(prefix="tokplay-faults-") as tmp:
        root = Path(tmp)
        TokenizerLibrary(root)
        for r in range(rounds):
            if time.monotonic() > deadline:
                problems.append(f"part B stopped after {r} rounds: time cap reached")
                break
            stats, round_problems = library_round(
                root, writers, seed_base=(r + 1) * 1000, n_merges=n_merges,
                delay=rng.uniform(0.0, 0.4), state=state,
            )
            totals["rounds"] += 1
            totals["writers killed"] += writers
            totals["consistent reopenings"] += not round_problems
            for key in ("lost", "in-flight saves kept", "in-flight deletes", "temp files found",
                        "orphan blobs removed"):
                totals[key] += stats[key]
            problems.extend(f"round {r}: {p}" for p in round_problems)
        totals["entries saved"] = len(state["returned"]) + len(state["deleted"])
        totals["entries deleted"] = len(state["deleted"])
        final = TokenizerLibrary(root)
        totals["entries at the end"] = len(final.list())
        for entry in final.list():
            try:
                final.load(entry.id)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"at the end: entry {entry.id} does not load: {exc}")
        totals["entries loaded at the end"] = len(final.list()) - sum(
            p.startswith("at the end") for p in problems)
    return totals, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10, help="training workers to kill")
    parser.add_argument("--rounds", type=int, default=150, help="library kill rounds")
    parser.add_argument("--writers", type=int, default=2, help="concurrent saving processes")
    parser.add_argument("--merges", type=int, default=1000, help="merges per toy tokenizer")
    parser.add_argument("--train-mb", type=float, default=4.0,
                        help="MB of docs-en the killed trainings learn from (0: built-in corpus)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--max-seconds", type=float, default=600)
    args = parser.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)  # ui's "no runtime" warnings
    rng = random.Random(args.seed)
    corpus, corpus_name = victim_corpus(args.train_mb)
    start = time.monotonic()
    deadline = start + args.max_seconds

    counts_a, problems_a = kill_workers(args.kills, rng, deadline, corpus)
    took_a = time.monotonic() - start
    counts_b, problems_b = kill_saves(args.rounds, args.writers, args.merges, rng, deadline)
    took_b = time.monotonic() - start - took_a

    print(f"A. Training workers killed with SIGKILL after 0-3 s ({corpus_name}, vocab 50,000, "
          f"2 at once; {took_a:.0f} s)")
    for key, value in counts_a.items():
        print(f"   {key:<34}{value:>6}")
    print(f"B. Library writers killed with SIGKILL mid-save ({args.writers} at once, "
          f"{args.merges} merges per tokenizer, {took_b:.0f} s)")
    for key, value in counts_b.items():
        print(f"   {key:<34}{value:>6}")
    problems = problems_a + problems_b
    if problems:
        print(f"\nPROBLEMS ({len(problems)}):")
        for p in problems[:30]:
            print(f"  {p}")
        return 1
    print("\nall killed jobs failed with the message, the manager kept serving, and every "
          "reopened library was consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
