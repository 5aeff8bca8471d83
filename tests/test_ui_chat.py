"""The Tokenize page's Chat mode under AppTest: counts equal core's, editing, links (long
conversations through the text store), a model with no template, a template that refuses,
and hostile links."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from core.chat import ChatTemplate, apply_chat_template
from core.services.library import TokenizerLibrary
from core.formats.presets import load_preset
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from tests.chat_templates import GEMMA
from ui.chat_view import DEFAULT_CONVERSATION, messages_of
from ui.site import page
from ui.state import fingerprint
from tests.copy_lines import copied
from tests.stats import stats

pytestmark = pytest.mark.xdist_group("apptest")

HOME = str(Path(__file__).resolve().parent.parent / "app.py")
GPT4 = "GPT-4 (cl100k_base)"


@pytest.fixture(autouse=True)
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "library"
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(path))
    monkeypatch.delenv("TOKPLAY_PUBLIC_URL", raising=False)
    return path


def open_chat(params: dict[str, str] | None = None, *tokenizers: tuple[str, object]) -> AppTest:
    at = AppTest.from_file(HOME, default_timeout=120)
    if tokenizers:
        at.session_state["ui.tokenizers"] = {
            label: {"tok": t, "source": "test", "fingerprint": fingerprint(t), "meta": {}}
            for label, t in tokenizers}
        at.session_state["ui.active"] = tokenizers[0][0]
    at.switch_page(page("Tokenize").script)
    for key, value in {"mode": "chat", **(params or {})}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in stats(at) if m.label == label)


def the_link(at: AppTest) -> str:
    return next(t for t in copied(at) if "/Tokenize?" in t)


def reopen(link: str) -> AppTest:
    query = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    query.pop("mode", None)
    return open_chat(query)


def count(conversation: list[list[str]], *, generation: bool = True) -> str:
    ids = apply_chat_template(load_preset("cl100k_base"), messages_of(conversation),
                              add_generation_prompt=generation)
    return f"{len(ids):,}"


def test_default_conversation_counts_as_core() -> None:
    at = open_chat({"tok": "cl100k_base"})
    assert metric(at, "Tokens") == count(DEFAULT_CONVERSATION)
    assert metric(at, "Messages") == "2"
    at.toggle(key="_w.tok.chat_gen").set_value(False).run()
    assert metric(at, "Tokens") == count(DEFAULT_CONVERSATION, generation=False)
    assert at.query_params["gen"] == "0"


def test_edit_add_move_remove() -> None:
    at = open_chat({"tok": "cl100k_base"})
    at.text_area(key="_w.tok.chat.text.1").input("Hi").run()
    at.button(key="tok.chat.add").click().run()
    at.text_area(key="_w.tok.chat.text.2").input("Hello!").run()
    chat = [["system", DEFAULT_CONVERSATION[0][1]], ["user", "Hi"], ["assistant", "Hello!"]]
    assert at.session_state["tok.chat"] == chat
    assert metric(at, "Tokens") == count(chat)
    at.number_input(key="tok.chat.picked").set_value(3).run()
    at.button(key="tok.chat.up").click().run()
    chat[1], chat[2] = chat[2], chat[1]
    assert at.session_state["tok.chat"] == chat
    assert at.text_area(key="_w.tok.chat.text.1").value == "Hello!"
    at.selectbox(key="_w.tok.chat.role.0").set_value("developer").run()
    at.number_input(key="tok.chat.picked").set_value(2).run()
    at.button(key="tok.chat.remove").click().run()
    chat = [["developer", chat[0][1]], chat[2]]
    assert at.session_state["tok.chat"] == chat
    assert metric(at, "Tokens") == count(chat)
    assert json.loads(at.query_params["chat"]) == chat
    at.button(key="tok.chat.remove").click().run()  # the last one picked: the pick follows
    assert not at.exception and at.number_input(key="tok.chat.picked").value == 1


def test_long_conversation_goes_through_the_text_store(library_dir: Path) -> None:
    chat = [["user", "A long message: 日本語 🧩 tabs\t and\nnewlines. " * 30],
            ["assistant", "Long answer. " * 50]]
    at = open_chat({"tok": "cl100k_base", "chat": json.dumps(chat)})
    value = at.query_params["chat"]
    assert value.startswith("@") and len(value) == 17
    assert json.loads(TokenizerLibrary(library_dir).load_text(value[1:])) == chat
    second = reopen(the_link(at))
    assert second.session_state["tok.chat"] == chat
    assert metric(second, "Tokens") == count(chat)


def test_model_without_template_gets_a_note() -> None:
    at = open_chat({"tok": "gpt2"})
    assert any("has no chat template" in i.value for i in at.info)
    assert metric(at, "Messages") == "2"


def test_template_that_refuses_and_named_templates() -> None:
    vocab, merges = train_bpe(["<start_of_turn>user hi<end_of_turn> " * 20], 300, ["<bos>"])
    tok = Tokenizer(vocab, merges, ["<bos>"], name="gemma-like")
    tok.chat_template = ChatTemplate(
        (("default", GEMMA), ("plain", "{{ messages[0].content }}")), "test",
        (("bos_token", "<bos>"),))
    at = open_chat(None, ("gemma-like", tok))
    assert any("System role not supported" in e.value for e in at.error)  # the default starts with a system message
    at.selectbox(key="tok.chat.template_pick").set_value("plain").run()
    assert at.query_params["tpl"] == "plain"
    assert metric(at, "Tokens") == f"{len(tok.encode(DEFAULT_CONVERSATION[0][1])):,}"


@pytest.mark.parametrize("query, note", [
    ({"chat": "not json"}, "cannot be read"),
    ({"chat": "[[1, 2]]"}, "not a [role, text] pair"),
    ({"chat": '[["wizard", "<img src=x onerror=alert(1)>"]]'}, "shown as user"),
    ({"chat": "@0123456789abcdef"}, "not stored on this server"),
    ({"mode": "voice"}, "not text or chat"),
])
def test_hostile_links(query: dict[str, str], note: str) -> None:
    at = open_chat({"tok": "cl100k_base", **query})
    shown = " ".join(w.value for w in at.warning) + " ".join(i.value for i in at.info)
    assert note in shown, shown


def test_conversation_kept_across_modes() -> None:
    at = open_chat({"tok": "cl100k_base"})
    at.text_area(key="_w.tok.chat.text.1").input("Kept?").run()
    at.radio(key="_w.tok.mode").set_value("Text").run()
    at.radio(key="_w.tok.mode").set_value("Chat").run()
    assert at.text_area(key="_w.tok.chat.text.1").value == "Kept?"
    assert copy.deepcopy(at.session_state["tok.chat"])[1] == ["user", "Kept?"]


def test_uploaded_tokenizer_json_with_its_config_has_its_template() -> None:
    """The sidebar's loader reads tokenizer_config.json beside tokenizer.json: the Chat mode
    then uses that template (and a chat_template.jinja would win over it)."""
    from core.formats.hf_json import dumps_hf_json

    vocab = {0: b"<s>", **{i + 1: bytes([i]) for i in range(256)}}
    files = {
        "tokenizer.json": dumps_hf_json(vocab, [], ["<s>"], pattern="gpt2").encode(),
        "tokenizer_config.json": json.dumps({
            "bos_token": "<s>",
            "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
        }).encode(),
    }
    at = open_chat()
    at.session_state["ui.loader"] = True
    at.run()
    at.sidebar.get("file_uploader")[0].set_value(
        [(name, data, "application/octet-stream") for name, data in files.items()])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    tok = at.session_state["ui.tokenizers"][at.session_state["ui.active"]]["tok"]
    assert tok.chat_template.source == "tokenizer_config.json"
    text = "".join(c for _, c in DEFAULT_CONVERSATION)
    assert metric(at, "Tokens") == f"{1 + len(text.encode()):,}"  # <s> then one token a byte
    assert any("tokenizer\\_config\\.json" in e.label for e in at.expander)  # escaped markdown
