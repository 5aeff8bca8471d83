"""The scenario runner: a server, the trainings beside it, and the closed loop of each cell.

Each measured session connects, does the page's first run (not timed), then loops with no
think time (:mod:`benchmarks.load.reruns`), each rerun timed from the send to its
``script_finished``. A rerun is an error if it showed an exception element, an error alert,
a compile error, did not finish within ``--run-timeout`` seconds, or did not show what the page
should.

"With 2 trainings": two more sessions open Train, and send one rerun with the widget states a
click sends (the "Vocab size" number input, the "Speed" radio, the "Start training" button's
trigger, their IDs read from the page's first run), on the built-in corpus. They then keep
polling the page's fragments (``auto_rerun`` ForwardMsgs: a fragment rerun every ``interval``
seconds, ``is_auto_rerun``), as a browser watching its training does. After the measurement
they press "Cancel" the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from benchmarks.load.client import ProtocolError, RunResult, Session, widget_state
from benchmarks.load.report import Cell, fmt, percentile
from benchmarks.load.reruns import TEXT_BOXES, Request, content_problems, page_request
from deploy.launch import start_streamlit

__all__ = [
    "SERVER_START_TIMEOUT_S",
    "SETUP_TIMEOUT_S",
    "group_cpu_seconds",
    "listening_pid",
    "measure",
    "run_all",
    "start_server",
    "start_training",
    "stop_training",
    "tree_cpu_seconds",
    "type_text",
    "wait_for_warm_ups",
]

SERVER_START_TIMEOUT_S = 120.0
SETUP_TIMEOUT_S = 180.0  # a session's first run (cold caches, trainings starting)


# ---- typing: what a keystroke pause sends (ui.live_input commits the text box) ---------------


async def type_text(s: Session, req: Request, timeout: float) -> RunResult:
    """Commit a new value of the page's text box as the browser does after a typing pause:
    the widget's new state, and the fragment that draws the box (only it reruns), with the
    session's address unchanged. The text comes from ``req``'s query (its ``text``/``ids``)."""
    import urllib.parse

    label = TEXT_BOXES[s.page]
    if label not in s.widgets:
        raise ProtocolError(f"{s.page} shows no text box labelled {label!r}")
    _, box = s.widgets[label]
    values = urllib.parse.parse_qs(req.query)
    value = (values.get("text") or values.get("ids") or [""])[0]
    query = s.query  # the address stays; the page itself writes the new one
    return await s.run(query, timeout, [widget_state(box.id, string_value=value)],
                       fragment_id=s.widget_fragments.get(label, ""))


# ---- trainings ------------------------------------------------------------------------------


async def start_training(ws_url: str, name: str, vocab: int, speed: str, corpus: str = "") -> Session:
    """A session on Train that started a training (the built-in corpus, or ``corpus``: a
    corpus the server lists, by name, as a link names it) and keeps polling it."""
    s = Session(ws_url, "Train", name)
    await s.open()
    query = urllib.parse.urlencode({"corpus": corpus}) if corpus else ""
    first = await s.run(query, SETUP_TIMEOUT_S)
    if first.errors:
        raise ProtocolError(f"{name}: Train's first run: {first.errors[0]}")
    missing = [w for w in ("Vocab size", "Speed", "Start training") if w not in s.widgets]
    if missing:
        raise ProtocolError(f"{name}: Train shows no {', '.join(missing)} widget")
    _, vocab_w = s.widgets["Vocab size"]
    _, speed_w = s.widgets["Speed"]
    _, start_w = s.widgets["Start training"]
    options = list(speed_w.options)
    if speed not in options:
        raise ProtocolError(f"{name}: no speed {speed!r} on Train (it offers {options})")
    if vocab_w.data_type == 0:  # NumberInput.INT
        vocab_state = widget_state(vocab_w.id, int_value=vocab)
    else:
        vocab_state = widget_state(vocab_w.id, double_value=float(vocab))
    # a radio's state is its option's label (string_value) in Streamlit 1.67
    s.keep_widgets = [vocab_state, widget_state(speed_w.id, string_value=speed)]
    started = await s.run(query, SETUP_TIMEOUT_S,
                          widget_states=[widget_state(start_w.id, trigger_value=True)])
    if started.errors:
        raise ProtocolError(f"{name}: starting the training: {started.errors[0]}")
    if "progress" not in started.element_types and "Cancel" not in s.widgets:
        raise ProtocolError(f"{name}: the training did not start (no progress bar)")
    return s


async def stop_training(s: Session) -> None:
    """Press Cancel (ends the training, keeps nothing), then close the session."""
    try:
        if "Cancel" in s.widgets and not s.closed.is_set():
            _, cancel = s.widgets["Cancel"]
            await s.run(s.query, 60, widget_states=[widget_state(cancel.id, trigger_value=True)])
    except Exception as err:  # noqa: BLE001 - the server is stopped afterwards anyway
        print(f"{s.name}: could not cancel its training: {type(err).__name__}: {err}",
              file=sys.stderr)
    finally:
        await s.close()


# ---- the server -----------------------------------------------------------------------------


def start_server(repo: Path, workdir: Path, corpus_dir: Path | None = None, *, warm: bool = False
                 ) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``streamlit run app.py`` in ``repo`` on a free 127.0.0.1 port, with an empty library,
    once healthy (:func:`deploy.launch.start_streamlit`: no file watcher, its own group);
    ``corpus_dir``: the folder it lists as server corpora (``TOKPLAY_CORPUS_DIRS``).
    ``warm``: as ``make run`` starts it (``deploy/warm_start.py``), returned once its warm-up
    is done (it says so in the log)."""
    library = workdir / "library"
    library.mkdir()
    log = workdir / "server.log"
    # PYTHONPATH: `core`, `training` and `ui` come from `repo` even if another checkout is
    # installed editable in this venv (its finder comes after sys.path, but be explicit).
    env = dict(os.environ, TOKPLAY_LIBRARY_DIR=str(library), PYTHONPATH=str(repo))
    if corpus_dir is not None:
        env["TOKPLAY_CORPUS_DIRS"] = str(corpus_dir)
    server = start_streamlit(cwd=repo, env=env, log=log, timeout=SERVER_START_TIMEOUT_S,
                             warm=warm)
    if warm:
        wait_for_warm_ups(log, server.process)
    return server.process, server.url, log


def wait_for_warm_ups(log: Path, process: subprocess.Popen[bytes], count: int = 1) -> None:
    """Wait until ``log`` says ``count`` warm-ups are done (``deploy/warm_start.py``: one per
    Streamlit process), at most SERVER_START_TIMEOUT_S; measured anyway after that or if
    ``process`` ended (the figures then include the warm-ups' work)."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while log.read_text(errors="replace").count("warm-up ") < count:
        if time.monotonic() > deadline or process.poll() is not None:
            break
        time.sleep(0.2)


def _process_table() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, process group, CPU seconds so far) of every live process (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 13:  # state, ppid, pgrp, ..., utime, stime
            table[int(entry)] = (int(fields[1]), int(fields[2]),
                                 (int(fields[11]) + int(fields[12])) / tick)
    return table


def group_cpu_seconds(pgid: int | None) -> float:
    """CPU seconds used so far by the live processes of process group ``pgid`` (Linux)."""
    if pgid is None:
        return float("nan")
    return sum(cpu for _, group, cpu in _process_table().values() if group == pgid)


def tree_cpu_seconds(root: int | None) -> float:
    """CPU seconds used so far by process ``root`` and its live descendants (Linux): a
    server with its training workers, or ``deploy/serve.py`` with its processes and HAProxy."""
    if root is None:
        return float("nan")
    table = _process_table()
    total = 0.0
    for pid, (_, _, cpu) in table.items():
        seen, p = 0, pid
        while p > 1 and p != root and seen < 64:
            p, seen = table.get(p, (0, 0, 0.0))[0], seen + 1
        if p == root:
            total += cpu
    return total


def listening_pid(port: int) -> int | None:
    """The process listening on TCP ``port`` on this machine, if it can be found (Linux)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{cols[9]}]")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
            if any(os.readlink(f"/proc/{entry}/fd/{fd}") in inodes for fd in fds):
                return int(entry)
        except OSError:
            continue
    return None


# ---- the measurement ------------------------------------------------------------------------


async def measure(ws_url: str, cell: Cell, args: argparse.Namespace, pgid: int | None,
                  cpu_seconds: Callable[[], float] | None = None) -> None:
    """One cell: open the sessions (first runs not timed), then the closed loop. The server's
    CPU is that of process group ``pgid``, or what ``cpu_seconds()`` counts."""
    server_cpu = cpu_seconds or (lambda: group_cpu_seconds(pgid))
    sessions = [Session(ws_url, cell.page, f"{cell.page}-{i}") for i in range(cell.sessions)]
    rngs = [random.Random(args.seed * 1000 + i) for i in range(cell.sessions)]
    ok: list[Session] = []

    def note(text: str) -> None:
        cell.errors += 1
        if text not in cell.messages:
            cell.messages.append(text)

    async def open_one(i: int, s: Session) -> None:
        try:
            await s.open()
            req = page_request(cell.page, args.chars, i, 0, rngs[i])
            res = await s.run(req.query, SETUP_TIMEOUT_S)
        except Exception as err:  # noqa: BLE001
            note(f"session setup: {type(err).__name__}: {err}")
            return
        problems = res.errors + content_problems(req, res.metrics, res.element_types)
        if problems:
            note(f"first run: {problems[0]}")
        ok.append(s)

    await asyncio.gather(*(open_one(i, s) for i, s in enumerate(sessions)))
    started = 0
    t_start = time.perf_counter()
    deadline = t_start + args.seconds
    cpu0, srv0 = time.process_time(), server_cpu()

    async def loop(i: int, s: Session) -> None:
        nonlocal started
        iteration = 1
        while time.perf_counter() < deadline and started < args.max_reruns:
            started += 1
            req = page_request(cell.page, args.chars, i, iteration, rngs[i])
            iteration += 1
            try:
                if args.mode == "typing":
                    res = await type_text(s, req, args.run_timeout)
                else:
                    res = await s.run(req.query, args.run_timeout)
            except asyncio.TimeoutError:
                note(f"rerun did not finish within {args.run_timeout:.0f} s")
                return  # a frozen session: no more from it
            except Exception as err:  # noqa: BLE001
                note(f"{type(err).__name__}: {err}")
                return
            problems = res.errors + content_problems(req, res.metrics, res.element_types)
            if problems:
                note(problems[0])
            else:
                cell.latencies_ms.append(res.ms)

    index = {id(s): i for i, s in enumerate(sessions)}
    await asyncio.gather(*(loop(index[id(s)], s) for s in ok))
    cell.elapsed_s = time.perf_counter() - t_start
    wall = cell.elapsed_s
    cell.client_cpu = 100 * (time.process_time() - cpu0) / wall
    cell.server_cpu = 100 * (server_cpu() - srv0) / wall
    await asyncio.gather(*(s.close() for s in sessions))
    for s in sessions:
        for err in s.background_errors:
            if not err.startswith("connection"):
                note(err)


async def run_all(args: argparse.Namespace, http: str, ws_url: str, pgid: int | None,
                  cpu_seconds: Callable[[], float] | None = None) -> list[Cell]:
    cells: list[Cell] = []
    trainers: list[Session] = []
    try:
        for n_train in args.trainings:
            while len(trainers) > n_train:
                await stop_training(trainers.pop())
            while len(trainers) < n_train:
                t0 = time.monotonic()
                corpus = args.train_corpus.name if args.train_corpus else ""
                trainers.append(await start_training(ws_url, f"trainer-{len(trainers) + 1}",
                                                     args.train_vocab, args.train_speed, corpus))
                print(f"# {trainers[-1].name}: training started in {time.monotonic() - t0:.1f} s",
                      file=sys.stderr, flush=True)
            if trainers:
                # the built-in corpus: measure while they merge (counting it takes a moment);
                # a big server corpus: while they count it, the heavy part
                phase = "Counting" if args.train_corpus else "Merges"
                t0 = time.monotonic()
                while (time.monotonic() - t0 < SETUP_TIMEOUT_S
                       and not all(t.progress_text.startswith(phase) for t in trainers)):
                    await asyncio.sleep(0.5)
                print(f"# trainings {phase.lower()} after {time.monotonic() - t0:.1f} s more: "
                      + "; ".join(repr(t.progress_text[:60]) for t in trainers),
                      file=sys.stderr, flush=True)
            for page in args.pages:
                for n in args.sessions:
                    cell = Cell(page, n_train, n)
                    await measure(ws_url, cell, args, pgid, cpu_seconds)
                    cells.append(cell)
                    progress = "; ".join(f"{t.name}: {t.progress_text[:70]!r}" for t in trainers)
                    print(f"# {page} trainings={n_train} sessions={n}: {len(cell.latencies_ms)} "
                          f"reruns, {cell.rate:.1f}/s, p50 "
                          f"{fmt(percentile(cell.latencies_ms, 50), '.0f')} ms, "
                          f"{cell.errors} errors" + (f" [{progress}]" if progress else ""),
                          file=sys.stderr, flush=True)
                    for t in trainers:
                        if t.closed.is_set():
                            raise ProtocolError(f"{t.name}: its session closed: "
                                                f"{t.background_errors[-1:]}")
                    await asyncio.sleep(args.pause)
    finally:
        for t in trainers:
            for err in dict.fromkeys(t.background_errors):
                print(f"# {t.name}: {err}", file=sys.stderr)
        await asyncio.gather(*(stop_training(t) for t in trainers))
    return cells
