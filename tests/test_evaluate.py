"""core.explain.evaluate: every number equals an independent count (tiktoken's IDs for the OpenAI
presets, plain len/split for sizes), on arbitrary Unicode cut into arbitrary chunks; the
vocab-size curve equals core.explain.replay's encoding at each step."""

from __future__ import annotations

from collections import Counter

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.explain.baselines import WordTokenizer
from core.errors import PlaygroundError
from core.explain.evaluate import (
    evaluate,
    longest_used,
    parallel_source,
    parallel_texts,
    parity,
    safe_pieces,
    top_tokens,
    unused_tokens,
)
from core.formats.presets import PRESETS, load_preset
from core.explain.replay import StepCounts, TextReplay, encode_with_first_merges
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe

NAMES = list(PRESETS)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# arbitrary Unicode, with the places cuts care about made likely: spaces, newlines, digits,
# a special token's text, CJK
_ALPHABET = st.one_of(st.characters(codec="utf-8"), st.sampled_from(" \n\t.,'1é日"))
TEXTS = st.lists(st.one_of(st.text(_ALPHABET, max_size=40),
                           st.just("<|endoftext|>"), st.just(" the"), st.just("\n\n")),
                 max_size=12)


@pytest.fixture(scope="module")
def oracles(tiktoken_cache):
    return {name: (load_preset(name), tiktoken.get_encoding(name)) for name in NAMES}


@pytest.fixture(scope="module")
def small_bpe():
    corpus = "low lower lowest newer newest wider widest\n" * 20 + "日本語 日本 café cafés"
    vocab, merges = train_bpe([corpus], 300, ["<|endoftext|>"])
    return Tokenizer(vocab, merges, ["<|endoftext|>"])


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


@SETTINGS
@given(parts=TEXTS, cuts=st.lists(st.integers(0, 10_000), max_size=6),
       piece=st.sampled_from([1, 7, 64, 1 << 16]))
def test_counts_equal_tiktoken_on_any_text_in_any_chunks(oracles, parts, cuts, piece):
    text = "".join(parts)
    for name, (tok, enc) in oracles.items():
        ids = enc.encode(text, allowed_special="all")
        result = evaluate(tok, _split(text, cuts), name="t", piece_chars=piece)
        s = result.stats
        assert (s.tokens, s.bytes, s.chars, s.words) == (
            len(ids), len(text.encode("utf-8")), len(text), len(text.split())), name
        assert s.exact
        assert result.usage == Counter(ids)
        if ids:
            assert s.bytes_per_token == len(text.encode("utf-8")) / len(ids)
            assert s.chars_per_token == len(text) / len(ids)


@SETTINGS
@given(parts=TEXTS, piece=st.sampled_from([1, 5, 50]))
def test_safe_pieces_give_back_the_text_and_encode_as_the_whole(oracles, parts, piece):
    text = "".join(parts)
    tok, enc = oracles["cl100k_base"]
    pieces = list(safe_pieces(tok, [text], piece_chars=piece))
    assert "".join(p for p, _ in pieces) == text
    assert [i for p, _ in pieces for i in enc.encode(p, allowed_special="all")] == \
        enc.encode(text, allowed_special="all")


def test_progress_reports_the_bytes_done(oracles):
    tok, _ = oracles["gpt2"]
    seen: list[int] = []
    text = "héllo wörld " * 5000
    evaluate(tok, [text], on_progress=seen.append, piece_chars=1000)
    assert len(seen) > 10 and seen == sorted(seen) and seen[-1] == len(text.encode("utf-8"))


def test_a_long_run_without_a_cut_is_kept_whole(oracles):
    tok, enc = oracles["o200k_base"]
    text = "x" * 5000 + " and then some words" * 400
    pieces = [p for p, _ in safe_pieces(tok, [text[i:i + 100] for i in range(0, len(text), 100)],
                                        piece_chars=64)]
    assert pieces[0].startswith("x" * 5000) and "".join(pieces) == text and len(pieces) > 3
    assert [i for p in pieces for i in enc.encode(p)] == enc.encode(text)


def test_tokenizers_without_a_known_cut_are_cut_at_lines_and_say_so():
    tok = WordTokenizer.train("alpha beta gamma\ndelta")
    text = "alpha beta\ngamma delta\n" * 50
    result = evaluate(tok, [text], piece_chars=30)
    assert result.stats.tokens == len(tok.encode(text)) and not result.stats.exact
    short = evaluate(tok, ["alpha beta"])
    assert short.stats.exact and short.stats.tokens == 2


def test_bad_chunks_are_refused():
    with pytest.raises(PlaygroundError, match="item 1 of the text is bytes"):
        evaluate(load_preset("gpt2"), ["ok", b"no"])  # type: ignore[list-item]


# ---- the vocab-size curve ----------------------------------------------------------------------


@SETTINGS
@given(parts=TEXTS)
def test_curve_equals_replay_at_every_step(small_bpe, parts):
    text = "".join(parts)
    result = evaluate(small_bpe, [text], curve=True, piece_chars=16)
    replay = TextReplay(small_bpe, text)
    assert list(result.curve) == [len(replay.ids(k)) for k in range(len(small_bpe.merges) + 1)]
    assert result.curve[-1] == result.stats.tokens


def test_curve_equals_the_first_k_merges_reference(small_bpe):
    text = "the lowest newer wider <|endoftext|> cafés 日本"
    counts = StepCounts(small_bpe)
    counts.add(text)
    got = counts.counts()
    assert len(got) == len(small_bpe.merges) + 1 > 30
    for k in range(len(got)):
        assert got[k] == len(encode_with_first_merges(small_bpe, text, k))


@SETTINGS
@given(parts=TEXTS)
def test_preset_curves_end_at_tiktoken_counts_and_match_replay(oracles, parts):
    text = "".join(parts)
    for name in ("gpt2", "o200k_base"):  # a merge list from ranks, with ignore_merges (o200k)
        tok, enc = oracles[name]
        result = evaluate(tok, [text], curve=True)
        assert result.curve[-1] == len(enc.encode(text, allowed_special="all"))
        assert result.curve[0] == len(text.encode("utf-8")) - 13 * text.count("<|endoftext|>") \
            + text.count("<|endoftext|>")
        replay = TextReplay(tok, text)
        for k in (1, 300, 5000, len(tok.merges) // 2):
            assert result.curve[k] == len(replay.ids(k))


def test_curve_needs_a_replayable_tokenizer():
    with pytest.raises(PlaygroundError, match="Replay shows byte-level BPE"):
        evaluate(WordTokenizer.train("a b"), ["a b"], curve=True)


# ---- which tokens are used ---------------------------------------------------------------------


def test_top_unused_and_longest_tokens_against_a_direct_count(oracles):
    tok, enc = oracles["gpt2"]
    text = "The cat sat on the mat. The mat was flat; the cat was not. Extraordinarily!"
    ids = enc.encode(text)
    usage = evaluate(tok, [text]).usage
    counts = Counter(ids)
    assert top_tokens(usage, 3) == sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    unused = unused_tokens(tok, usage)
    assert len(unused) == enc.n_vocab - len(counts) and not set(unused) & set(ids)
    longest = longest_used(tok, usage, 2)
    by_length = sorted(counts, key=lambda i: (-len(enc.decode_single_token_bytes(i)), i))[:2]
    assert [(i, enc.decode_single_token_bytes(i), counts[i]) for i in by_length] == longest


def test_unused_tokens_skip_ids_with_no_token(oracles):
    tok, enc = oracles["cl100k_base"]
    unused = unused_tokens(tok, {})
    expected = [i for i in range(enc.n_vocab) if i in enc._special_tokens.values()
                or _is_token(enc, i)]
    assert unused == expected


def _is_token(enc, i):
    try:
        enc.decode_single_token_bytes(i)
    except KeyError:
        return False
    return True


# ---- the parallel set and parity ---------------------------------------------------------------


def test_parallel_set_is_bundled_with_english_first():
    texts = parallel_texts()
    assert list(texts)[0] == "en" and len(texts) >= 12
    assert all(name and len(text) > 50 for name, text in texts.values())
    assert len({text for _, text in texts.values()}) == len(texts)
    assert "written and translated for Tokenizer Playground" in parallel_source()


def test_parity_equals_tiktoken_ratios(oracles):
    _, enc = oracles["cl100k_base"]
    tok = load_preset("cl100k_base")
    tokens = {code: evaluate(tok, [text]).stats.tokens for code, (_, text) in parallel_texts().items()}
    english = len(enc.encode(parallel_texts()["en"][1]))
    assert parity(tokens) == {code: len(enc.encode(text)) / english
                              for code, (_, text) in parallel_texts().items()}
    with pytest.raises(PlaygroundError, match="non-empty 'en'"):
        parity({"de": 3})
