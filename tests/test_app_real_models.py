"""The pages with real models' tokenizers: Llama 3 (a rank file), Mistral (SentencePiece) and
a BERT-style WordPiece tokenizer.json, on Tokenize, Decode, Vocabulary and Compare."""

from __future__ import annotations

from importlib import resources

import pytest

from core.formats.detect import load_tokenizer_files
from tests.conftest import need_module
from tests.html_tables import tables
from tests.test_app_pages import COMPARE, DECODE, TOKENIZE, VOCAB, all_html, metric, open_page

pytestmark = pytest.mark.xdist_group("apptest")

TEXT = "Hello wörld 🧩 DON'T stop"


@pytest.fixture(scope="module")
def mistral():
    need_module("mistral_common")
    data = resources.files("mistral_common").joinpath("data", "tokenizer.model.v1").read_bytes()
    return load_tokenizer_files({"tokenizer.model.v1": data})


@pytest.fixture(scope="module")
def llama3():
    need_module("llama_models")
    data = resources.files("llama_models").joinpath("llama3", "tokenizer.model").read_bytes()
    return load_tokenizer_files({"tokenizer.model": data})


@pytest.fixture(scope="module")
def bert():
    """A WordPiece tokenizer.json trained by Hugging Face `tokenizers` itself."""
    tokenizers = need_module("tokenizers")
    from core.train.builtin_corpus import builtin_corpus_text

    hf = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    hf.decoder = tokenizers.decoders.WordPiece()
    trainer = tokenizers.trainers.WordPieceTrainer(
        vocab_size=600, special_tokens=["[UNK]", "[CLS]", "[SEP]"])
    hf.train_from_iterator([builtin_corpus_text()], trainer)
    hf.post_processor = tokenizers.processors.BertProcessing(
        ("[SEP]", hf.token_to_id("[SEP]")), ("[CLS]", hf.token_to_id("[CLS]")))
    return load_tokenizer_files({"tokenizer.json": hf.to_str().encode()}), hf


def test_tokenize_shows_sentencepiece_tokens_with_their_file_spelling(mistral):
    at = open_page(TOKENIZE, ("mistral", mistral))
    at.text_area[0].set_value(TEXT).run()
    assert not at.exception and not at.error
    assert metric(at, "Tokens") == f"{len(mistral.encode(TEXT)):,}"
    at.toggle(key="_w.tok.gpt2_view").set_value(True).run()
    html = all_html(at)
    assert "▁Hello" in html and "&lt;0xF0&gt;" in html  # the emoji's byte-fallback tokens
    assert "tp-grp" in html  # ... framed together under the character they make


def test_the_template_toggle_adds_the_models_bos(mistral, llama3):
    for tok, bos in ((mistral, "&lt;s&gt;"), (llama3, "&lt;|begin_of_text|&gt;")):
        at = open_page(TOKENIZE, ("model", tok))
        at.text_area[0].set_value(TEXT).run()
        plain = metric(at, "Tokens")
        assert bos not in all_html(at)
        at.toggle(key="_w.tok.add_special").set_value(True).run()
        assert not at.exception
        assert metric(at, "Tokens") == f"{len(tok.encode(TEXT, add_special_tokens=True)):,}"
        assert int(metric(at, "Tokens")) == int(plain) + 1
        assert bos in all_html(at)


def test_decode_shows_byte_fallback_u_fffd_per_byte(mistral):
    ids = mistral.encode("🧩")[:-1] + mistral.encode(" ok")  # the emoji cut short
    at = open_page(DECODE, ("mistral", mistral))
    at.text_area[0].set_value(" ".join(map(str, ids))).run()
    assert not at.exception
    text = mistral.decode(ids)
    assert text.count("\ufffd") == 3
    assert metric(at, "U+FFFD") == "3"


def test_vocabulary_lists_a_wordpiece_vocab_with_its_continuations(bert):
    tok, hf = bert
    at = open_page(VOCAB, ("bert", tok))
    assert not at.exception and not at.error
    assert metric(at, "Tokens") == f"{hf.get_vocab_size():,}"
    (table,) = tables(at)
    assert "in the file" in table[0]
    assert any(str(row["in the file"]).startswith("##") for row in table)


def test_tokenize_wordpiece_matches_hugging_face(bert):
    tok, hf = bert
    at = open_page(TOKENIZE, ("bert", tok))
    at.text_area[0].set_value("Tokenizers split TEXT.").run()
    assert not at.exception
    ids = hf.encode("Tokenizers split TEXT.", add_special_tokens=False).ids
    assert metric(at, "Tokens") == f"{len(ids):,}"
    at.toggle(key="_w.tok.add_special").set_value(True).run()
    assert metric(at, "Tokens") == f"{len(ids) + 2:,}"  # [CLS] ... [SEP]


def test_compare_puts_llama3_mistral_and_gpt4o_side_by_side(mistral, llama3):
    at = open_page(COMPARE, ("Llama 3", llama3), ("Mistral v1", mistral))
    at.session_state["cmp.tokenizers"] = ["Llama 3", "Mistral v1", "GPT-4o (o200k_base)"]
    at.session_state["cmp.text"] = TEXT
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    from core.formats.presets import load_preset

    rows = {r["tokenizer"]: r for r in tables(at)[0]}
    expected = {"Llama 3": llama3, "Mistral v1": mistral, "GPT-4o (o200k_base)": load_preset("o200k_base")}
    for label, tok in expected.items():
        assert rows[label]["tokens"] == len(tok.encode(TEXT)), label
        assert rows[label]["round trip"] == "✓"
    assert rows["Mistral v1"]["kind"] == "SentencePiece BPE"
    assert rows["Llama 3"]["kind"] == "byte-level BPE (by rank)"
