"""Server time of the Tokenize page on 10,000 characters (target: under 300 ms).

Runs the real page script with Streamlit's AppTest (no browser): one warm-up run per
tokenizer, then each timed run types a *new* 10,000-character slice of the built-in corpus, so
no cached result is reused. Prints a table of median / max milliseconds per tokenizer.

    .venv/bin/python benchmarks/bench_tokenize_page.py [--runs 5] [--chars 10000] 2>/dev/null
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from streamlit import logger as st_logger  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.train.builtin_corpus import BUILTIN_SEPARATOR, builtin_corpus_text  # noqa: E402
from core.engine.tokenizer import Tokenizer  # noqa: E402
from core.train import train_bpe  # noqa: E402
from ui.state import fingerprint  # noqa: E402
from ui.site import page  # noqa: E402
from tests.stats import stats

TOKENIZE = page("Tokenize").script


def _unigram(corpus: str) -> object:
    """A SentencePiece Unigram model (8,000 pieces) trained by sentencepiece on ``corpus``."""
    import io

    import sentencepiece as spm

    from core.pipeline.sentencepiece import sentencepiece_tokenizer

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([ln for ln in corpus.splitlines() if ln.strip()]),
        model_writer=out, model_type="unigram", vocab_size=8000, minloglevel=2,
    )  # fmt: skip
    return sentencepiece_tokenizer(out.getvalue(), name="unigram 8k")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chars", type=int, default=10_000)
    args = parser.parse_args()
    st_logger.set_log_level("error")  # AppTest's bare-mode warnings are noise here

    corpus = builtin_corpus_text().replace(BUILTIN_SEPARATOR, "\n")
    vocab, merges = train_bpe([corpus], 2000, [BUILTIN_SEPARATOR])
    mine = Tokenizer(vocab, merges, [BUILTIN_SEPARATOR], name="built-in 2k")
    unigram = _unigram(corpus)  # T5's kind: a SentencePiece Unigram .model, nmt_nfkc

    print(f"Tokenize page server time, {args.chars:,} characters, {args.runs} runs each")
    print(f"{'tokenizer':<26}{'tokens':>8}{'median ms':>12}{'max ms':>10}")
    for label in ["built-in 2k (trained)", "GPT-2 (gpt2)", "GPT-4 (cl100k_base)",
                  "Unigram 8k (.model)"]:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
        at.session_state["ui.tokenizers"] = {
            "built-in 2k (trained)": {"tok": mine, "source": "bench", "fingerprint": fingerprint(mine)},
            "Unigram 8k (.model)": {"tok": unigram, "source": "bench",
                                    "fingerprint": fingerprint(unigram)},
        }
        at.session_state["ui.active"] = label
        at.run()
        at.switch_page(TOKENIZE).run()  # warm-up: loads the preset, compiles regexes
        times = []
        for k in range(args.runs):
            start = (k + 1) * 37_000 % (len(corpus) - args.chars)
            text = corpus[start : start + args.chars]
            at.text_area[0].set_value(text)
            t0 = time.perf_counter()
            at.run()
            times.append((time.perf_counter() - t0) * 1000)
            if at.exception:
                raise SystemExit(at.exception[0].value)
        tokens = next(m.value for m in stats(at) if m.label == "Tokens")
        print(f"{label:<26}{tokens:>8}{statistics.median(times):>12.0f}{max(times):>10.0f}")


if __name__ == "__main__":
    main()
