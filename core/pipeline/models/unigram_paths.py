"""What a Unigram search explains: a path through the lattice, node by node, and the two
best paths through a text (:meth:`core.pipeline.models.unigram.UnigramModel.split_paths`).

>>> a = UnigramPath((LatticeNode(0, 1, 1, "a", -1.0), LatticeNode(1, 2, 2, "b", -2.0)), -3.0)
>>> ab = UnigramPath((LatticeNode(0, 2, 3, "ab", -2.5),), -2.5)
>>> SplitPaths("ab", ab, a).differing()
(0, 2)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LatticeNode", "SplitPaths", "UnigramPath"]


@dataclass(frozen=True)
class LatticeNode:
    """One piece of a path: ``text[start:end]`` as ``piece`` (ID ``id``), scoring
    ``score``; ``unknown`` for a character no piece covers (scored ``unk_score``)."""

    start: int
    end: int
    id: int
    piece: str
    score: float
    unknown: bool = False


@dataclass(frozen=True)
class UnigramPath:
    """A segmentation of a text and its score (the sum of its pieces' scores)."""

    nodes: tuple[LatticeNode, ...]
    score: float


@dataclass(frozen=True)
class SplitPaths:
    """Why a text is cut as it is: the ``best`` path (the one encoding takes) and the
    ``runner_up``, the best path that cuts it any other way (``None`` when there is none)."""

    text: str
    best: UnigramPath
    runner_up: UnigramPath | None

    def differing(self) -> tuple[int, int]:
        """The characters ``(start, end)`` of :attr:`text` the two paths cut differently
        (from the first cut only one of them makes to the last); ``(0, 0)`` without a
        runner-up.

        >>> from core.pipeline.models.unigram import UnigramModel
        >>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], unk_id=0)
        >>> m.split_paths("abab").differing()
        (0, 2)
        """
        if self.runner_up is None:
            return (0, 0)
        cuts_best = {x.end for x in self.best.nodes}
        cuts_other = {x.end for x in self.runner_up.nodes}
        differ = sorted(cuts_best ^ cuts_other)
        if not differ:
            return (0, 0)
        shared = sorted(cuts_best & cuts_other | {0})
        start = max(c for c in shared if c < differ[0])
        end = min(c for c in shared if c > differ[-1])
        return (start, end)
