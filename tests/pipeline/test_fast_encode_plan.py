"""The encode plan (core.pipeline.fast_encode.encode_plan): a tokenizer looks its stages up
once, keeps the plan between calls, and makes a new one when a stage or its added tokens are
replaced; the plain plan (no added token to look for) gives the loop's IDs. Also the helpers
the mixed-script benchmark led to: Unicode 17's characters found without the ``regex``
module's slow class, and a text with no special token's first character skipping the
special-token search, and a long text encoded with the garbage collector paused."""

from __future__ import annotations

import gc
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine.basics import BULK_TEXT
from core.pipeline.added_tokens import AddedToken
from core.pipeline.fast_encode import encode_plan
from core.pipeline.models import BPEModel, WordLevelModel
from core.pipeline.normalizers import Lowercase
from core.pipeline.pre_tokenizers import Metaspace
from core.pipeline.tokenizer import PipelineTokenizer
from core.pipeline.unicode_tables import (
    NEWER_THAN_UNICODE_16,
    has_newer_than_unicode_16,
    sub_newer_than_unicode_16,
)
from core.engine.text_encoder import TextEncoder

VOCAB = {"<unk>": 0, "▁": 1, "a": 2, "b": 3, "▁a": 4, "ab": 5, "A": 6}
MERGES = [("▁", "a"), ("a", "b")]


def _bpe(**stages: object) -> PipelineTokenizer:
    return PipelineTokenizer(model=BPEModel(VOCAB, MERGES, unk_token="<unk>"), **stages)


def test_the_plan_is_kept_and_a_replaced_stage_makes_a_new_one() -> None:
    tok = _bpe(pre_tokenizer=Metaspace())
    assert tok.encode("A ab") == [1, 6, 4, 3]
    plan = tok.__dict__["_encode_plan"]
    assert tok.encode("ab") == [4, 3] and tok.__dict__["_encode_plan"] is plan
    tok.normalizer = Lowercase()
    assert "_encode_plan" not in tok.__dict__
    assert tok.encode("A ab") == [4, 4, 3]  # the new normalizer lower-cases "A"


def test_added_tokens_replaced_make_a_new_plan() -> None:
    tok = _bpe(pre_tokenizer=Metaspace())
    assert tok.encode("ab<x>") == [4, 3, 0, 0, 0]
    tok._add_tokens([AddedToken("<x>", normalized=False)])
    assert tok.encode("ab<x>") == [4, 3, 7]


def test_a_tokenizer_pickles_without_its_plan() -> None:
    tok = _bpe(pre_tokenizer=Metaspace())
    tok.encode("ab")
    copy = pickle.loads(pickle.dumps(tok))
    assert "_encode_plan" not in copy.__dict__ and copy.encode("ab a") == tok.encode("ab a")


TEXT = st.text(st.sampled_from(list("ab A▁<x>\n")), max_size=30)


@given(TEXT)
@settings(max_examples=100, deadline=None)
def test_the_plain_plan_is_the_general_loop(text: str) -> None:
    plain = _bpe(pre_tokenizer=Metaspace(), normalizer=Lowercase())
    # an added token that never occurs makes the general loop run instead of the plain one
    general = _bpe(pre_tokenizer=Metaspace(), normalizer=Lowercase(),
                   added_tokens=[AddedToken("\x00never", normalized=False)])  # fmt: skip
    assert encode_plan(plain)(text) == encode_plan(general)(text) == general._encode_ids_pieces(text)


def test_a_word_level_model_without_encode_words_takes_the_general_loop() -> None:
    tok = PipelineTokenizer(model=WordLevelModel({"<unk>": 0, "hi": 1}), pre_tokenizer=Metaspace(
        replacement=" ", prepend_scheme="never"))  # fmt: skip
    assert encode_plan(tok)("hi hi") == [1, 0]


def test_newer_than_unicode_16_on_every_code_point() -> None:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    mark = {"\u0295": "<ʕ>"}
    want = NEWER_THAN_UNICODE_16.sub(lambda m: mark.get(m.group(), "?"), every)
    assert sub_newer_than_unicode_16(lambda c: mark.get(c, "?"), every) == want
    found = [c for c in every[0x2000:0x2100] + every[0x18D00:0x18E10] if has_newer_than_unicode_16(c)]
    assert found == [m.group() for m in NEWER_THAN_UNICODE_16.finditer(
        every[0x2000:0x2100] + every[0x18D00:0x18E10])]  # fmt: skip


class _Refuses:
    """A special-token splitter that must not be asked."""

    def finditer(self, text: str) -> None:
        raise AssertionError(f"searched {text!r} for special tokens")


def test_a_text_without_a_specials_first_character_is_not_searched() -> None:
    enc = TextEncoder(pattern="gpt2", specials={"<|eot|>": 9}, bpe=lambda p: (len(p),),
                      cache_size=100)  # fmt: skip
    found = enc._special_re
    enc._special_re = _Refuses()
    assert enc.encode("Hi you!") == [2, 4, 1]
    enc._special_re = found
    assert enc.encode("Hi<|eot|> you") == [2, 9, 4]


def test_a_long_text_encodes_with_the_collector_paused() -> None:
    seen: list[bool] = []

    def bpe(pretoken: str) -> tuple[int, ...]:
        seen.append(gc.isenabled())
        return (len(pretoken),)

    enc = TextEncoder(pattern="gpt2", specials={}, bpe=bpe, cache_size=100)
    enc.encode("short one")
    enc.encode("word " * (BULK_TEXT // 5 + 1))
    assert seen[:2] == [True, True] and seen[-1] is False and gc.isenabled()


def test_a_long_text_through_a_pipeline_encodes_with_the_collector_paused() -> None:
    seen: list[bool] = []
    tok = _bpe(pre_tokenizer=Metaspace())
    plan = encode_plan(tok)
    tok.__dict__["_encode_plan"] = lambda text: seen.append(gc.isenabled()) or plan(text)
    assert tok.encode("ab") == [4, 3]
    assert tok.encode("ab " * BULK_TEXT)[:2] == [4, 3]
    assert seen == [True, False] and gc.isenabled()
