"""What each rerun asks of a page and what the page must then show.

A measured session loops with no think time: a rerun with a fresh query string
(``tok=gpt2&text=<N fresh characters>`` on Tokenize, ``tok=gpt2&ids=<N/4 random GPT-2 IDs>``
on Decode, ``tok=gpt2&tok=cl100k_base&text=...`` on Compare). A rerun is an error unless it
shows what the page should (Tokenize: the "Characters" metric equal to the text's length and a
"Tokens" metric; Decode: the "IDs" metric equal to the number of IDs; Compare: a table).
"""

from __future__ import annotations

import random
import urllib.parse
from dataclasses import dataclass

__all__ = [
    "GPT2_MAX_ID",
    "PAGES",
    "TEXT_BOXES",
    "Request",
    "content_problems",
    "make_ids",
    "make_text",
    "page_request",
    "query_string",
]

#: The pages a cell can measure (their URL paths).
PAGES = ("Tokenize", "Decode", "Compare")
#: The largest GPT-2 token ID: Decode's random IDs stay inside its vocab (no error alert).
GPT2_MAX_ID = 50_256
#: The text box each page's typing commits (its label).
TEXT_BOXES = {"Tokenize": "Text", "Compare": "Text", "Decode": "Token IDs"}

# Fresh text: words cycled from a fixed pool (ASCII, so characters == bytes == the metric).
_WORDS = (
    "the", "tokenizer", "merges", "frequent", "byte", "pairs", "into", "new", "tokens",
    "while", "a", "team", "of", "users", "types", "text", "into", "the", "playground", "and",
    "compares", "how", "many", "pieces", "each", "model", "needs", "for", "the", "same",
    "sentence", "about", "rivers", "mountains", "numbers", "2024", "emails", "and", "source",
    "code",
)


def make_text(n_chars: int, session: int, iteration: int) -> str:
    """Exactly ``n_chars`` ASCII characters, different for every (session, iteration): a
    prefix naming both, then words of the pool from a position that depends on them.

    >>> t = make_text(60, 3, 7); len(t), t.startswith("s3 i7 ")
    (60, True)
    """
    prefix = f"s{session} i{iteration} "
    words: list[str] = []
    i = (session * 7919 + iteration * 104_729) % len(_WORDS)
    length = len(prefix)
    while length < n_chars:
        word = _WORDS[i % len(_WORDS)]
        words.append(word)
        length += len(word) + 1
        i += 1
    return (prefix + " ".join(words))[:n_chars].ljust(n_chars, ".")


def make_ids(n: int, rng: random.Random) -> list[int]:
    """``n`` random GPT-2 token IDs (all inside its vocab: no out-of-vocab error alert)."""
    return [rng.randrange(0, GPT2_MAX_ID + 1) for _ in range(max(1, n))]


def query_string(params: list[tuple[str, str]]) -> str:
    """URL query as the playground writes it (``ui.links.query_string``: %20 for spaces).

    >>> query_string([("tok", "gpt2"), ("tok", "cl100k_base"), ("text", "a b&c")])
    'tok=gpt2&tok=cl100k_base&text=a%20b%26c'
    """
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


@dataclass(frozen=True)
class Request:
    """One rerun of a page: its query string and what the page must then show."""

    query: str
    metrics: tuple[tuple[str, str], ...] = ()  # (metric label, exact value)
    need_metrics: tuple[str, ...] = ()  # labels that must be present
    need_table: bool = False


def page_request(page: str, n_chars: int, session: int, iteration: int,
                 rng: random.Random) -> Request:
    """The fresh rerun of ``page`` for one session's ``iteration``.

    >>> page_request("Decode", 60, 0, 0, random.Random(1)).metrics
    (('IDs', '15'),)
    """
    if page == "Tokenize":
        text = make_text(n_chars, session, iteration)
        return Request(query_string([("tok", "gpt2"), ("text", text)]),
                       metrics=(("Characters", f"{len(text):,}"),), need_metrics=("Tokens",))
    if page == "Decode":
        ids = make_ids(max(1, n_chars // 4), rng)  # about n_chars characters of GPT-2 text
        return Request(query_string([("tok", "gpt2"), ("ids", ", ".join(map(str, ids)))]),
                       metrics=(("IDs", f"{len(ids):,}"),))
    if page == "Compare":
        text = make_text(n_chars, session, iteration)
        return Request(query_string([("tok", "gpt2"), ("tok", "cl100k_base"), ("text", text)]),
                       need_table=True)
    raise ValueError(f"unknown page {page!r}")


def content_problems(req: Request, metrics: dict[str, str], element_types: set[str]) -> list[str]:
    """What the page should have shown for ``req`` and did not ([] when all is there).

    >>> content_problems(Request("q", metrics=(("IDs", "3"),)), {"IDs": "2"}, set())
    ["metric 'IDs' shows '2', expected '3'"]
    """
    problems = []
    for label, want in req.metrics:
        got = metrics.get(label)
        if got != want:
            problems.append(f"metric {label!r} shows {got!r}, expected {want!r}")
    for label in req.need_metrics:
        if label not in metrics:
            problems.append(f"no metric {label!r}")
    if req.need_table and not element_types & {"dataframe", "table", "arrow_data_frame",
                                               "html_table"}:
        problems.append("no table")
    return problems
