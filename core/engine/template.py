"""What ``add_special_tokens=True`` adds around one text: a model's BOS/EOS template.

Hugging Face calls this the post-processor (``TemplateProcessing`` ``"<s> $A"``,
``BertProcessing`` ``"[CLS] $A [SEP]"``); SentencePiece calls it ``add_bos``/``add_eos``;
Llama's own code passes ``bos=True``. Every tokenizer here carries one :class:`Template`.

>>> t = Template(prefix=(1,), suffix=(), text="<s> $A")
>>> t.apply([415, 1526])
[1, 415, 1526]
>>> Template().apply([5]), Template().text
([5], '$A')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Template"]


@dataclass(frozen=True)
class Template:
    """IDs put before (``prefix``) and after (``suffix``) a single text's tokens, and the
    template as a model card writes it (``"<|begin_of_text|> $A"``; ``$A`` is the text)."""

    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    text: str = "$A"

    def apply(self, ids: Sequence[int]) -> list[int]:
        """``prefix + ids + suffix`` as a new list."""
        return [*self.prefix, *ids, *self.suffix]

    def __bool__(self) -> bool:
        """False for the empty template (nothing would be added)."""
        return bool(self.prefix or self.suffix)
