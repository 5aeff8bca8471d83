"""What a server process does once, for every session: answer without Nagle's delay, and warm
the caches that a page's first run would otherwise fill while its first visitor waits.

- **TCP_NODELAY** (:func:`tcp_nodelay`). subtle: Streamlit 1.67 binds its listening socket
  itself with ``socket.socket(family)``, protocol 0, and asyncio sets TCP_NODELAY only on
  sockets whose protocol is ``IPPROTO_TCP``. So Nagle's algorithm stayed on: a run's second
  message waited for the browser's delayed ACK, about 40 ms on every run (a bare page
  answered a rerun in 48 ms, 16 ms with it: benchmarks/load_protocol.py). Setting it on the
  listening socket covers the connections accepted later (Linux copies it to them), and the
  connections already open are set too. :func:`prepare_process` does it on the first page run
  of the process (``ui.page.setup``).
- **Warm-up** (:func:`warm`). A fresh process spent 2-12 s on each page's first run: imports
  (numpy, pandas, the page modules), the presets and their fingerprints, GPT-2's vocabulary
  table, the baselines (the char-level one trains for seconds). ``deploy/warm_start.py``
  (``make run``, ``make serve``) calls :func:`warm` in a thread as soon as the server is up,
  so the first visitors find them loaded (a page's first run then takes about 0.5 s).

Process-wide, never per user: both change only the server's own sockets and shared caches.
"""

from __future__ import annotations

import gc
import importlib
import os
import pkgutil
import socket
from collections.abc import Callable

import streamlit as st

import ui
from ui import cache, state

__all__ = ["WARM_STEPS", "prepare_process", "tcp_nodelay", "warm"]

_FD_DIR = "/proc/self/fd"  # Linux; elsewhere the sockets are left as they are


def tcp_nodelay() -> int:
    """Set TCP_NODELAY on every TCP socket of this process (the server's listening socket and
    its open connections); return how many were set. Nothing where ``/proc`` is missing.

    >>> import socket
    >>> server = socket.socket(socket.AF_INET)  # protocol 0, as Streamlit makes it
    >>> server.bind(("127.0.0.1", 0)); server.listen()
    >>> tcp_nodelay() >= 1, server.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    (True, True)
    >>> server.close()
    """
    try:
        fds = [int(name) for name in os.listdir(_FD_DIR)]
    except OSError:
        return 0
    done = 0
    for fd in fds:
        try:
            if not os.readlink(f"{_FD_DIR}/{fd}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(fd))  # a duplicate: closing it leaves fd open
        except OSError:
            continue  # closed meanwhile, or not a socket Python can wrap
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                done += 1
        except OSError:
            pass
        finally:
            sock.close()
    return done


@st.cache_resource(max_entries=1, show_spinner=False)
def prepare_process() -> int:
    """Once per process, on its first page run: :func:`tcp_nodelay` (the sockets set)."""
    return tcp_nodelay()


# ---------------------------------------------------------------------------------------------
# Warm-up


def _import_ui() -> None:
    """Import every ``ui`` module (and with them numpy, pandas and core's modules)."""
    for module in pkgutil.iter_modules(ui.__path__):
        importlib.import_module(f"ui.{module.name}")


def _presets() -> None:
    """Load the presets, and compute what a page's first run asks them for: their
    capabilities, which hash their content (``fingerprint()``, about a second for GPT-4's)."""
    for name in state.PRESET_LABELS.values():
        cache.preset(name).capabilities  # noqa: B018 - computed once, kept by the tokenizer


def _baselines() -> None:
    for kind in state.BASELINE_LABELS.values():
        cache.baseline(kind).capabilities  # noqa: B018 - as for the presets


def _default_views() -> None:
    """What a fresh session's Vocabulary page shows first: GPT-2's whole table and its token
    lengths (a second and more to build)."""
    label, name = next(iter(state.PRESET_LABELS.items()))  # the first a picker offers: GPT-2
    key, tok = state.tokenizer_key(label), cache.preset(name)
    cache.vocab_table(key, "", tok, order="ID")
    cache.length_counts(key, tok)


#: What :func:`warm` fills, cheapest first: (name, step).
WARM_STEPS: tuple[tuple[str, Callable[[], None]], ...] = (
    ("imports", _import_ui),
    ("presets", _presets),
    ("views", _default_views),
    ("baselines", _baselines),
)


def freeze_heap() -> None:
    """Keep what the process has loaded so far (Streamlit, numpy, pandas, the presets'
    tables, the warm caches) out of the garbage collector's full collections.

    subtle: a full collection walks every container alive, and one came every few seconds
    under load: 150-270 ms each with the presets and Streamlit loaded, a pause for every
    session in flight (most of a 20-session p95). Those objects live as long as the process,
    so ``gc.freeze`` moves them to the permanent generation: later collections walk only
    what came after (sessions, their caches)."""
    gc.collect()  # (what is garbage now is freed, not frozen)
    gc.freeze()


def warm(steps: tuple[str, ...] | None = None) -> list[str]:
    """Fill the shared caches a first visit needs (``steps``: names of :data:`WARM_STEPS`,
    all by default); returns one line per step that failed, ``[]`` when all went well. A step
    that fails is left for the page that needs it to report, as it would without a warm-up."""
    problems = []
    for name, step in WARM_STEPS:
        if steps is not None and name not in steps:
            continue
        try:
            step()
        except Exception as err:  # noqa: BLE001 - the page that needs it says so in its words
            problems.append(f"{name}: {type(err).__name__}: {err}")
    return problems
