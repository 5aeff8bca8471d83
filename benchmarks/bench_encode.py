"""Encode/decode throughput of our presets vs tiktoken on docs-en, one thread, same process.

    .venv/bin/python benchmarks/bench_encode.py                 # all of docs-en, 3 encodings
    .venv/bin/python benchmarks/bench_encode.py --limit-mb 5 --encodings gpt2 --no-stream

For each encoding it times tiktoken's ``encode(text, allowed_special="all")`` and ours with a
new Tokenizer (cold cache) and again (warm cache), then both decoders, checking that every
result equals tiktoken's. Times are the best of ``--repeat`` interleaved runs: the machine is
shared, so compare the ratios printed by one run, not absolute MB/s across runs.

Then it streams the whole file through ``encode_iterable`` in a fresh subprocess (so the text
and ID lists held here do not hide its footprint) and reports the growth of the process's
peak RSS above what it had after loading the preset, with a cold cache (the first pass fills
the bounded caches) and a warm one; the streamed IDs are checked against tiktoken's by hash.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from array import array
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CORPUS = REPO.parent / "shared" / "corpora" / "docs-en.txt.gz"
CACHE = REPO.parent / "shared" / "tiktoken-cache"
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(CACHE))

from core.presets import load_preset  # noqa: E402
from core.tokenizer import Tokenizer  # noqa: E402


def ids_digest(ids, digest=None):
    digest = digest or hashlib.sha1()
    digest.update(array("I", ids).tobytes())
    return digest


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return -1


def stream_child(name: str) -> None:
    """Run in a subprocess: stream docs-en through encode_iterable twice, print JSON."""
    tok = load_preset(name)
    fresh = Tokenizer(tok.vocab, tok.merges, tok.special_tokens,
                      pattern=tok.pattern, ignore_merges=tok.ignore_merges)  # fmt: skip
    del tok
    gc.collect()
    out = {}
    for label in ("cold", "warm"):
        gc.collect()
        try:  # reset the peak (VmHWM) to the current RSS
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass
        before = _status("VmRSS")
        start = time.perf_counter()
        digest = hashlib.sha1()
        batch: list[int] = []
        count = 0
        with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
            for i in fresh.encode_iterable(fh):
                batch.append(i)
                if len(batch) >= 65536:
                    ids_digest(batch, digest)
                    count += len(batch)
                    batch.clear()
        ids_digest(batch, digest)
        count += len(batch)
        out[label] = {
            "seconds": time.perf_counter() - start,
            "rss_before": before,
            "peak_growth": _status("VmHWM") - before,
            "sha1": digest.hexdigest(),
            "count": count,
        }
    print(json.dumps(out))


def best(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encodings", default="gpt2,cl100k_base,o200k_base")
    parser.add_argument("--limit-mb", type=float, default=0, help="use only the first N MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-stream", action="store_true", help="skip the encode_iterable run")
    parser.add_argument("--stream-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stream_child:
        stream_child(args.stream_child)
        return

    import tiktoken

    text = gzip.open(CORPUS, "rt", encoding="utf-8").read()
    if args.limit_mb:
        text = text[: int(args.limit_mb * 1e6)]
    mb = len(text.encode("utf-8")) / 1e6
    print(f"docs-en: {mb:.1f} MB, {len(text):,} chars; best of {args.repeat} runs, one thread\n")
    header = f"{'encoding':<12} {'operation':<22} {'tiktoken MB/s':>13} {'ours MB/s':>10} {'ratio':>6}  IDs equal"
    print(header)
    print("-" * len(header))
    ok = True
    for name in args.encodings.split(","):
        enc = tiktoken.get_encoding(name)
        t = time.perf_counter()
        preset = load_preset(name)
        load_s = time.perf_counter() - t

        def fresh() -> Tokenizer:
            return Tokenizer(preset.vocab, preset.merges, preset.special_tokens,
                             pattern=preset.pattern, ignore_merges=True)  # fmt: skip

        ref = enc.encode(text, allowed_special="all")
        tt, ref = best(lambda: enc.encode(text, allowed_special="all"), args.repeat)
        cold_times, cold_equal = [], True
        for _ in range(args.repeat):
            tok = fresh()
            t = time.perf_counter()
            ids = tok.encode(text)
            cold_times.append(time.perf_counter() - t)
            cold_equal &= ids == ref
            del ids
        tw, ids = best(lambda: tok.encode(text), args.repeat)
        warm_equal = ids == ref
        del ids
        td_ref, s_ref = best(lambda: enc.decode(ref), args.repeat)
        td, s = best(lambda: tok.decode(ref), args.repeat)
        dec_equal = s == s_ref == text
        del s, s_ref
        tc = min(cold_times)
        rows = [
            ("encode, cold cache", tt, tc, cold_equal),
            ("encode, warm cache", tt, tw, warm_equal),
            ("decode", td_ref, td, dec_equal),
        ]
        for label, t_ref, t_ours, equal in rows:
            print(f"{name:<12} {label:<22} {mb / t_ref:>13.2f} {mb / t_ours:>10.2f} "
                  f"{t_ref / t_ours:>6.2f}  {'yes' if equal else 'NO'}")  # fmt: skip
            ok &= equal
        print(f"{'':<12} (preset load {load_s:.2f} s; {len(ref):,} tokens)")
        gc.collect()

    if not args.no_stream and not args.limit_mb:
        print("\nencode_iterable over the whole gzip file, line by line, fresh process:")
        for name in args.encodings.split(","):
            enc = tiktoken.get_encoding(name)
            want = ids_digest(enc.encode(text, allowed_special="all")).hexdigest()
            res = subprocess.run(
                [sys.executable, __file__, "--stream-child", name],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            out = json.loads(res.stdout)
            for label, r in out.items():
                equal = r["sha1"] == want
                ok &= equal
                print(f"  {name:<12} {label} cache: peak RSS growth {r['peak_growth'] / 1e6:6.1f} MB "
                      f"(RSS after loading {r['rss_before'] / 1e6:.0f} MB), "
                      f"{mb / r['seconds']:.2f} MB/s, IDs equal tiktoken: {'yes' if equal else 'NO'}")  # fmt: skip
    print("\nall IDs equal tiktoken" if ok else "\nMISMATCH: see 'NO' above")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
