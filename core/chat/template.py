"""A model's chat template(s) as data, and where they come from: the files beside a
``tokenizer.json`` (``tokenizer_config.json``, ``chat_template.jinja``), GGUF metadata.

A :class:`ChatTemplate` holds a model's template(s) and the named special tokens its
templates read (``bos_token``, ``eos_token``...). It comes from

- ``tokenizer_config.json``'s ``chat_template``: one string, or a list of
  ``{"name", "template"}`` (:func:`chat_template_from_files`, read beside ``tokenizer.json``
  by :func:`core.formats.load_tokenizer_files` through :func:`with_chat_template`);
- a separate ``chat_template.jinja`` (and ``chat_templates/<name>.jinja``), which wins over
  the config's, as in transformers;
- GGUF's ``tokenizer.chat_template`` (:func:`chat_template_from_gguf`);
- a built-in format for OpenAI's encodings (:mod:`core.chat.formats`).

Rendering is :mod:`core.chat`'s.

>>> chat_template_from_files({"tokenizer_config.json": b'{"chat_template": "{{ 1 }}"}'}).names
['default']
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.chat.sandbox import ChatTemplateError
from core.errors import FormatError

__all__ = [
    "CONFIG_FILE",
    "JINJA_FILE",
    "SPECIAL_TOKEN_NAMES",
    "ChatTemplate",
    "chat_template_from_config",
    "chat_template_from_files",
    "chat_template_from_gguf",
    "with_chat_template",
]

#: transformers' SPECIAL_TOKENS_ATTRIBUTES: the named tokens every template can read.
SPECIAL_TOKEN_NAMES = (
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
)  # fmt: skip
#: The files beside tokenizer.json that carry a chat template.
CONFIG_FILE = "tokenizer_config.json"
JINJA_FILE = "chat_template.jinja"
SPECIALS_FILE = "special_tokens_map.json"


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template(s), where they came from, and what they read.

    ``templates``: ``(name, jinja source)`` pairs (one template is named ``"default"``);
    ``source``: where they came from, for the page (``"tokenizer_config.json"``);
    ``special_tokens``: transformers' ``special_tokens_map`` (``bos_token`` -> its text);
    ``added_specials``: ``(template name, token, ID)``: special tokens a template writes that
    the tokenizer itself lacks (the built-in OpenAI formats: ``<|im_start|>`` is not in
    cl100k_base); ``default``: the template used when none is named; ``note``: what the page
    says about it (a built-in format names its reference).

    >>> t = ChatTemplate.single("{{ bos_token }}", source="x", special_tokens={"bos_token": "<s>"})
    >>> t.names, t.get(), t.special_tokens_map
    (['default'], '{{ bos_token }}', {'bos_token': '<s>'})
    """

    templates: tuple[tuple[str, str], ...]
    source: str
    special_tokens: tuple[tuple[str, str], ...] = ()
    added_specials: tuple[tuple[str, str, int], ...] = ()
    default: str = "default"
    note: str = ""
    _digest: list[str] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def single(cls, template: str, *, source: str,
               special_tokens: Mapping[str, str] | None = None) -> ChatTemplate:
        """One template, named ``"default"``."""
        return cls((("default", template),), source, tuple((special_tokens or {}).items()))

    @property
    def names(self) -> list[str]:
        """The templates' names, in file order."""
        return [name for name, _ in self.templates]

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """``bos_token`` -> its text, as the template reads them."""
        return dict(self.special_tokens)

    def get(self, name: str | None = None, *, tools: object = None) -> str:
        """The template text, by transformers' ``get_chat_template`` rules: ``name`` when
        given (a name, or a template's own text), else ``tool_use`` when tools are given and
        there is one, else ``default``.

        >>> ChatTemplate((("a", "A"), ("b", "B")), "x").get()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        core.chat.sandbox.ChatTemplateError: this model has several chat templates (a, b) ...
        """
        found = dict(self.templates)
        if name is not None:
            return found.get(name, name)
        if tools is not None and "tool_use" in found:
            return found["tool_use"]
        if self.default in found:
            return found[self.default]
        raise ChatTemplateError(
            f"this model has several chat templates ({', '.join(self.names)}) and none is "
            "named default: choose one"
        )

    def added_for(self, name: str | None = None) -> list[tuple[str, int]]:
        """``(token, ID)`` of the special tokens template ``name`` adds to the tokenizer.

        >>> ChatTemplate((("a", ""),), "x", added_specials=(("a", "<x>", 9),), default="a").added_for()
        [('<x>', 9)]
        """
        name = self.default if name is None else name
        return [(token, i) for owner, token, i in self.added_specials if owner == name]

    def fingerprint(self) -> str:
        """16 hex digits of everything here: a cache key beside the tokenizer's own."""
        if not self._digest:
            data = json.dumps([self.templates, self.special_tokens, self.added_specials])
            self._digest.append(hashlib.sha256(data.encode()).hexdigest()[:16])
        return self._digest[0]


# ─── where templates come from ───────────────────────────────────────────────────────────


def _token_text(value: Any) -> str | None:
    """A special token as a config writes it: a string, or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _special_tokens(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found = ((name, _token_text(config.get(name))) for name in SPECIAL_TOKEN_NAMES)
    return tuple((name, text) for name, text in found if text is not None)


def _templates_in_config(value: Any, file_name: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [("default", value)]
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            if not (isinstance(item, Mapping) and isinstance(item.get("name"), str)
                    and isinstance(item.get("template"), str)):
                raise FormatError(
                    f"{file_name}: chat_template[{i}] is not {{\"name\": ..., \"template\": ...}}"
                )
            out.append((item["name"], item["template"]))
        return out
    if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
        return [(str(k), v) for k, v in value.items()]
    raise FormatError(f"{file_name}: chat_template is {type(value).__name__}, not text or a list")


def chat_template_from_config(
    config: Mapping[str, Any], *, jinja: Mapping[str, str] | None = None,
    source: str = CONFIG_FILE,
) -> ChatTemplate | None:
    """The chat template of a parsed ``tokenizer_config.json`` (``None`` when it has none).

    ``jinja``: template name -> text from separate ``.jinja`` files; when there are any they
    replace the config's templates, as transformers' ``from_pretrained`` does.

    >>> t = chat_template_from_config({"chat_template": [{"name": "default", "template": "A"},
    ...     {"name": "tool_use", "template": "B"}], "eos_token": {"content": "</s>"}})
    >>> t.names, t.get(tools=[]), t.special_tokens_map
    (['default', 'tool_use'], 'B', {'eos_token': '</s>'})
    """
    templates = list(jinja.items()) if jinja else _templates_in_config(
        config.get("chat_template"), source
    )
    if not templates:
        return None
    if jinja:
        source = ", ".join(f"chat_templates/{n}.jinja" if n != "default" else JINJA_FILE
                           for n in jinja)
    return ChatTemplate(tuple(templates), source, _special_tokens(config))


def _text(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise FormatError(f"{name} is not UTF-8 text (byte {err.start})") from None


def _json_object(data: bytes | str, name: str) -> dict[str, Any]:
    try:
        obj = json.loads(_text(data, name))
    except json.JSONDecodeError as err:
        raise FormatError(f"{name}: not valid JSON at line {err.lineno} ({err.msg})") from None
    if not isinstance(obj, dict):
        raise FormatError(f"{name}: a JSON object was expected")
    return obj


def chat_template_from_files(files: Mapping[str, bytes | str]) -> ChatTemplate | None:
    """The chat template among a model's files (file name -> bytes): ``tokenizer_config.json``,
    ``chat_template.jinja`` and ``chat_templates/*.jinja``; ``None`` when none carries one.
    The named special tokens come from the config, or, for a config without
    ``added_tokens_decoder`` (the older layout), from ``special_tokens_map.json`` first, as
    transformers reads them. A broken file raises :class:`FormatError` saying where.

    >>> chat_template_from_files({"tokenizer.json": b"{}", "chat_template.jinja": b"{{ 1 }}"}).get()
    '{{ 1 }}'
    """
    config: dict[str, Any] = {}
    specials: dict[str, Any] = {}
    jinja: dict[str, str] = {}
    for name, data in files.items():
        path = name.replace("\\", "/")
        base = posixpath.basename(path).lower()
        if base == CONFIG_FILE:
            config = _json_object(data, name)
        elif base == SPECIALS_FILE:
            specials = _json_object(data, name)
        elif base == JINJA_FILE:
            jinja["default"] = _text(data, name)
        elif base.endswith(".jinja") and posixpath.basename(posixpath.dirname(path)) == "chat_templates":
            jinja[posixpath.basename(path)[: -len(".jinja")]] = _text(data, name)
    if specials and "added_tokens_decoder" not in config:
        config = {**config, **{k: v for k, v in specials.items() if k in SPECIAL_TOKEN_NAMES}}
    return chat_template_from_config(config, jinja=jinja)


def chat_template_from_gguf(
    template: str, *, bos_token: str | None = None, eos_token: str | None = None,
    unk_token: str | None = None, pad_token: str | None = None,
) -> ChatTemplate:
    """A GGUF file's ``tokenizer.chat_template`` with the tokens its metadata names
    (``tokenizer.ggml.bos_token_id`` etc., looked up as text by the GGUF loader).

    >>> chat_template_from_gguf("{{ bos_token }}", bos_token="<s>").source
    'GGUF tokenizer.chat_template'
    """
    named = {"bos_token": bos_token, "eos_token": eos_token, "unk_token": unk_token,
             "pad_token": pad_token}
    return ChatTemplate.single(
        template, source="GGUF tokenizer.chat_template",
        special_tokens={k: v for k, v in named.items() if v is not None},
    )


def with_chat_template(load: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a loader of ``files`` (name -> bytes) so the tokenizer it returns carries the
    chat template found beside it (:func:`chat_template_from_files`) as ``chat_template``.
    The ``.jinja`` files are the wrapper's: the loader never sees them."""

    @functools.wraps(load)
    def loader(files: Mapping[str, bytes], *args: Any, **kwargs: Any) -> Any:
        own = {k: v for k, v in files.items() if not k.lower().endswith(".jinja")}
        tok = load(own, *args, **kwargs)
        template = chat_template_from_files(files)
        if template is not None:
            tok.chat_template = template
        return tok

    return loader
