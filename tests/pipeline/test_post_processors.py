"""core.pipeline.post_processors against ``tokenizers``: what ``add_special_tokens=True``
adds around one sequence, for each post-processor a ``tokenizer.json`` can name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.errors import FormatError
from core.pipeline.post_processors import Template, post_processor_from_json
from tests.conftest import need_module

VOCAB = {"<unk>": 0, "<s>": 1, "</s>": 2, "[CLS]": 3, "[SEP]": 4, "hi": 5, "there": 6}


def special(token: str, *ids: int) -> dict[str, Any]:
    return {"id": token, "ids": list(ids), "tokens": [token] * len(ids)}


def seq(kind: str = "A", type_id: int = 0) -> dict[str, Any]:
    return {"Sequence": {"id": kind, "type_id": type_id}}


def tok(token: str, type_id: int = 0) -> dict[str, Any]:
    return {"SpecialToken": {"id": token, "type_id": type_id}}


def template(single: list[Any], **specials: tuple[int, ...]) -> dict[str, Any]:
    return {
        "type": "TemplateProcessing",
        "single": single,
        "pair": [seq("A"), seq("B", 1)],
        "special_tokens": {t: special(t, *ids) for t, ids in specials.items()},
    }


LLAMA = template([tok("<s>"), seq()], **{"<s>": (1,)})
BERT_TEMPLATE = template(
    [tok("[CLS]"), seq(), tok("[SEP]")], **{"[CLS]": (3,), "[SEP]": (4,)}
)
CASES: dict[str, tuple[Any, Template]] = {
    "none": (None, Template()),
    "llama": (LLAMA, Template((1,), (), "<s> $A")),
    "bert-template": (BERT_TEMPLATE, Template((3,), (4,), "[CLS] $A [SEP]")),
    "eos-only": (
        template([seq(), tok("</s>")], **{"</s>": (2,)}),
        Template((), (2,), "$A </s>"),
    ),
    "multi-id": (
        template([tok("<s>"), seq(), tok("</s>")], **{"<s>": (1, 3), "</s>": (4, 2)}),
        Template((1, 3), (4, 2), "<s> <s> $A </s> </s>"),
    ),
    "type-ids": (
        template([tok("<s>", 1), seq("A", 2)], **{"<s>": (1,)}),
        Template((1,), (), "<s> $A"),
    ),
    "bert": (
        {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3]},
        Template((3,), (4,), "[CLS] $A [SEP]"),
    ),
    "roberta": (
        {
            "type": "RobertaProcessing",
            "sep": ["</s>", 2],
            "cls": ["<s>", 1],
            "trim_offsets": True,
            "add_prefix_space": False,
        },
        Template((1,), (2,), "<s> $A </s>"),
    ),
    "bytelevel": (
        {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        Template(),
    ),
    "llama3-sequence": (
        {
            "type": "Sequence",
            "processors": [
                {
                    "type": "ByteLevel",
                    "add_prefix_space": True,
                    "trim_offsets": False,
                    "use_regex": True,
                },
                LLAMA,
            ],
        },
        Template((1,), (), "<s> $A"),
    ),
    "nested-sequence": (
        {
            "type": "Sequence",
            "processors": [LLAMA, template([seq(), tok("</s>")], **{"</s>": (2,)})],
        },
        # the second template sees two parts (<s>, the text): it applies its *pair*
        # template, "$A $B:1" here, so no </s>
        Template((1,), (), "<s> $A"),
    ),
    "bert-then-template": (
        {
            "type": "Sequence",
            "processors": [
                {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3]},
                template([tok("<s>"), seq()], **{"<s>": (1,)}),
            ],
        },
        Template((1, 3), (4,), "<s> [CLS] $A [SEP]"),
    ),
    "template-then-roberta": (
        {
            "type": "Sequence",
            "processors": [
                LLAMA,
                {
                    "type": "RobertaProcessing",
                    "sep": ["</s>", 2],
                    "cls": ["<s>", 1],
                    "trim_offsets": False,
                    "add_prefix_space": False,
                },
            ],
        },
        # two parts: <s> gets cls/sep, the text gets RoBERTa's pair treatment
        Template((1, 1, 2, 2), (2,), "<s> <s> </s> </s> $A </s>"),
    ),
    "template-then-roberta-without-its-fields": (
        {
            "type": "Sequence",
            "processors": [
                LLAMA,
                {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]},
            ],
        },
        # Hugging Face reads a RobertaProcessing without trim_offsets/add_prefix_space
        # as BertProcessing: the text gets BERT's pair treatment (no leading </s>)
        Template((1, 1, 2), (2,), "<s> <s> </s> $A </s>"),
    ),
}


def oracle_ids(
    post_processor: Any, text: str, *, add_special_tokens: bool
) -> list[int]:
    tk = need_module("tokenizers")
    doc = {
        "version": "1.0",
        "added_tokens": [],
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": post_processor,
        "model": {"type": "WordLevel", "vocab": VOCAB, "unk_token": "<unk>"},
    }
    tokenizer = tk.Tokenizer.from_str(json.dumps(doc))
    return tokenizer.encode(text, add_special_tokens=add_special_tokens).ids


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("text", ["hi there", "", "what"])
def test_matches_tokenizers(case: str, text: str) -> None:
    obj, expected = CASES[case]
    got = post_processor_from_json(obj)
    assert got == expected
    plain = oracle_ids(obj, text, add_special_tokens=False)
    assert got.apply(plain) == oracle_ids(obj, text, add_special_tokens=True)


def test_string_templates_are_read() -> None:
    # the form TemplateProcessing's Python constructor takes ("[CLS]:0 $A:0 [SEP]:0")
    obj = {
        "type": "TemplateProcessing",
        "single": "[CLS]:0 $A:0 [SEP]:0",
        "special_tokens": {"[CLS]": special("[CLS]", 3), "[SEP]": special("[SEP]", 4)},
    }
    assert post_processor_from_json(obj) == Template((3,), (4,), "[CLS] $A [SEP]")
    obj["single"] = ["$0"]
    assert post_processor_from_json(obj) == Template()


def test_python_built_templates_match() -> None:
    tk = need_module("tokenizers")
    from tokenizers import processors

    built = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A $B:1 </s>:1",
        special_tokens=[("<s>", 1), ("</s>", 2)],
    )
    tokenizer = tk.Tokenizer(tk.models.WordLevel(VOCAB, unk_token="<unk>"))
    tokenizer.post_processor = built
    obj = json.loads(tokenizer.to_str())["post_processor"]
    assert post_processor_from_json(obj) == Template((1,), (2,), "<s> $A </s>")


def test_lookup_fills_ids_of_a_hand_written_template() -> None:
    obj = template([tok("<s>"), seq()])
    obj["special_tokens"] = {"<s>": {"id": "<s>", "tokens": ["<s>"]}}
    assert post_processor_from_json(obj, VOCAB.get).prefix == (1,)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"type": "Nope"}, "'Nope' is not supported; TemplateProcessing"),
        ("BertProcessing", "not supported"),
        (template([seq(), seq()]), "exactly once"),
        (template([tok("<s>")], **{"<s>": (1,)}), "exactly once"),
        (template([tok("<s>"), seq()]), "not in its special_tokens"),
        (template([{"Nope": {}}, seq()]), "single\\[0\\]"),
        (
            {"type": "BertProcessing", "sep": ["[SEP]"], "cls": ["[CLS]", 3]},
            "post_processor.sep",
        ),
        ({"type": "Sequence"}, "list of processors"),
        (
            {"type": "Sequence", "processors": [{"type": "Bad"}]},
            "'Bad' is not supported",
        ),
    ],
)
def test_bad_post_processors_name_the_problem(obj: Any, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        post_processor_from_json(obj, name="t.json")


def test_template_apply() -> None:
    assert Template((1,), (2,), "<s> $A </s>").apply([]) == [1, 2]
    assert Template().apply([5, 6]) == [5, 6]


UNRUNNABLE = {
    # three parts reach the second template: Hugging Face panics (todo!())
    "template-inside-template": {
        "type": "Sequence",
        "processors": [BERT_TEMPLATE, LLAMA],
    },
    # $B in a single template: Hugging Face panics (index out of range)
    "single-with-b": template([seq(), seq("B", 1)]),
}


@pytest.mark.parametrize("case", sorted(UNRUNNABLE))
def test_what_tokenizers_cannot_run_is_refused(case: str) -> None:
    obj = UNRUNNABLE[case]
    with pytest.raises(FormatError, match="single"):
        post_processor_from_json(obj, name="t.json")
    with pytest.raises(BaseException):  # noqa: B017 (pyo3's PanicException)
        oracle_ids(obj, "hi", add_special_tokens=True)
