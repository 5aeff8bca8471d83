"""Load test without browsers: Streamlit's own websocket protocol, closed loop, no think time.

benchmarks/load_test.py drives headless chromium on the same cores as the server, so its
latencies mostly measure the browsers. This test's client speaks the protocol the browser
speaks (Streamlit 1.67; :mod:`benchmarks.load.client` says how): one websocket per session,
reruns asked for with a query string and widget states, ForwardMsgs read until the run's
``script_finished``.

Each measured session connects, does the page's first run (not timed), then loops with no
think time: a rerun with a fresh query string (``tok=gpt2&text=<N fresh characters>`` on
Tokenize, ``tok=gpt2&ids=<N/4 random GPT-2 IDs>`` on Decode,
``tok=gpt2&tok=cl100k_base&text=...`` on Compare), timed from the send to its
``script_finished``. A rerun is an error if it showed an exception element, an error alert,
a compile error, did not finish within ``--run-timeout`` seconds, or did not show what the page
should (Tokenize: the "Characters" metric equal to the text's length and a "Tokens" metric;
Decode: the "IDs" metric equal to the number of IDs; Compare: a table).

"With 2 trainings": two more sessions open Train, start a training on the built-in corpus with
the widget states a click sends, and keep polling the page's fragments as a browser watching
its training does; after the measurement they press "Cancel" the same way.

Bounded: ``--seconds`` (at most 120) per cell, at most ``--max-reruns`` reruns per cell, each
rerun at most ``--run-timeout`` seconds, a hard wall-clock cap on the whole run; loopback only
(its own server on 127.0.0.1, or ``--url`` of one on 127.0.0.1/localhost).

    .venv/bin/python benchmarks/load_protocol.py [--pages Tokenize,Decode,Compare]
        [--sessions 1,5,10,20] [--trainings 0,2] [--seconds 10] [--chars 60] [--repo DIR]

The client shares the machine's cores with the server: the table gives its own CPU use
(``client CPU %``, of one core) and the server's with its training workers (``server CPU %``).

This file is the command line; the parts are in ``benchmarks/load/``: ``client.py`` (the
protocol), ``reruns.py`` (what each rerun asks and checks), ``runner.py`` (server, trainings,
the closed loop) and ``report.py`` (the figures and the table).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

REPO_DEFAULT = Path(__file__).resolve().parent.parent
if str(REPO_DEFAULT) not in sys.path:  # run as a script: only benchmarks/ is on the path
    sys.path.insert(0, str(REPO_DEFAULT))

from benchmarks.load.client import ProtocolError, loopback_urls  # noqa: E402
from benchmarks.load.report import (  # noqa: E402
    Cell,
    format_table,
    percentile,
    report_server_log,
)
from benchmarks.load.reruns import (  # noqa: E402
    GPT2_MAX_ID,
    PAGES,
    Request,
    content_problems,
    make_text,
    page_request,
)
from benchmarks.load.runner import (  # noqa: E402
    SETUP_TIMEOUT_S,
    listening_pid,
    run_all,
    start_server,
    tree_cpu_seconds,
)
from deploy.launch import healthy, stop  # noqa: E402

__all__ = [
    "GPT2_MAX_ID",
    "MAX_SECONDS",
    "PAGES",
    "TRAIN_VOCAB",
    "Cell",
    "Request",
    "content_problems",
    "format_table",
    "loopback_urls",
    "main",
    "make_text",
    "page_request",
    "parse_counts",
    "parse_pages",
    "percentile",
]

MAX_SECONDS = 120.0
TRAIN_VOCAB = 50_000  # TOKPLAY_MAX_VOCAB's default: the largest a training may ask for


def parse_counts(text: str) -> list[int]:
    """``"1,5, 10"`` -> [1, 5, 10] (each at least 0, order kept, duplicates dropped).

    >>> parse_counts("1,5, 10,5")
    [1, 5, 10]
    """
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        n = int(part)
        if n < 0:
            raise ValueError(f"not a count: {part!r}")
        if n not in out:
            out.append(n)
    if not out:
        raise ValueError(f"no counts in {text!r}")
    return out


def parse_pages(text: str) -> list[str]:
    """``"tokenize,Decode"`` -> ["Tokenize", "Decode"] (only the pages this test knows).

    >>> parse_pages("tokenize,Decode")
    ['Tokenize', 'Decode']
    """
    known = {p.lower(): p for p in PAGES}
    out: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.lower() not in known:
            raise ValueError(f"unknown page {part!r} (known: {', '.join(PAGES)})")
        if known[part.lower()] not in out:
            out.append(known[part.lower()])
    if not out:
        raise ValueError(f"no pages in {text!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--sessions", default="1,5,10,20", help="concurrent sessions per cell")
    parser.add_argument("--trainings", default="0,2", help="trainings running during a cell")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help=f"measurement seconds per cell (at most {MAX_SECONDS:.0f})")
    parser.add_argument("--max-reruns", type=int, default=2000, help="per cell")
    parser.add_argument("--chars", type=int, default=60,
                        help="characters of text per rerun (Decode: chars/4 IDs)")
    parser.add_argument("--run-timeout", type=float, default=60.0,
                        help="a rerun not finished after this many seconds is an error")
    parser.add_argument("--train-vocab", type=int, default=TRAIN_VOCAB)
    parser.add_argument("--train-speed", default="5 merges/s",
                        help="a label of Train's Speed radio (slow: the trainings keep running)")
    parser.add_argument("--train-corpus", type=Path,
                        help="a big corpus file the trainings read as a server corpus (its folder "
                             "becomes TOKPLAY_CORPUS_DIRS), measured while they count it")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between cells")
    parser.add_argument("--repo", type=Path, default=REPO_DEFAULT,
                        help="the checkout whose app.py to serve (default: this one)")
    parser.add_argument("--url", help="a running server on this machine instead of a new one")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--mode", choices=("link", "typing"), default="link",
                        help="link: each rerun opens a new address (a whole-page run); "
                             "typing: each rerun commits the page's text box as a typing pause "
                             "does (only the fragment drawing it reruns, where there is one)")
    args = parser.parse_args(argv)
    try:
        args.pages = parse_pages(args.pages)
        args.sessions = [n for n in parse_counts(args.sessions) if n > 0]
        args.trainings = parse_counts(args.trainings)
        if args.url:
            loopback_urls(args.url)
    except ValueError as err:
        parser.error(str(err))
    args.seconds = max(0.5, min(args.seconds, MAX_SECONDS))
    args.max_reruns = max(1, args.max_reruns)
    args.chars = max(1, min(args.chars, 5000))
    n_cells = len(args.pages) * len(args.sessions) * len(args.trainings)
    hard_cap = (n_cells * (args.seconds + args.run_timeout + args.pause + 30)
                + len(args.trainings) * 2 * SETUP_TIMEOUT_S + SETUP_TIMEOUT_S)
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())

    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    with tempfile.TemporaryDirectory(prefix="tokplay-loadproto-") as tmp:
        try:
            if args.url:
                http, ws_url = loopback_urls(args.url)
                if not healthy(http):
                    print(f"no healthy Streamlit server at {http}", file=sys.stderr)
                    return 2
                where = http
            else:
                repo = args.repo.resolve()
                corpus_dir = args.train_corpus.resolve().parent if args.train_corpus else None
                proc, http, log = start_server(repo, Path(tmp), corpus_dir)
                http, ws_url = loopback_urls(http)
                where = f"{http} serving {repo}"
            print(f"# server: {where}", file=sys.stderr, flush=True)
            pgid = proc.pid if proc is not None else None
            # --url: the CPU of the process listening there and its children (a server and
            # its training workers; behind HAProxy, HAProxy's alone)
            root = None if proc is not None else listening_pid(urllib.parse.urlsplit(http).port or 80)
            cpu = (lambda: tree_cpu_seconds(root)) if root is not None else None
            try:
                cells = asyncio.run(asyncio.wait_for(run_all(args, http, ws_url, pgid, cpu),
                                                     timeout=hard_cap))
            except asyncio.TimeoutError:
                print(f"ABORTED: the run exceeded its hard cap of {hard_cap:.0f} s",
                      file=sys.stderr)
                return 2
            except ProtocolError as err:
                print(f"FAILED: {err}", file=sys.stderr)
                return 2
        finally:
            if proc is not None:
                stop(proc)
        tracebacks = report_server_log(log)

    print()
    print(f"Protocol-level load test: closed loop, no think time, {args.chars}-character "
          f"texts (Decode: {max(1, args.chars // 4)} IDs), GPT-2; {args.seconds:.0f} s per cell; "
          f"trainings: {args.train_corpus.name if args.train_corpus else 'built-in corpus'}, "
          f"vocab {args.train_vocab:,}, {args.train_speed!r}; "
          f"{os.cpu_count()} CPUs, load average before {load_before}")
    print()
    print(format_table(cells))
    messages = [(c, m) for c in cells for m in c.messages]
    if messages:
        print()
        print("errors (first of each kind per cell):")
        for c, m in messages:
            print(f"- {c.page}/{c.trainings}/{c.sessions}: {m[:300]}")
    bad = sum(c.errors for c in cells)
    return 1 if bad or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
