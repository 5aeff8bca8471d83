"""core.engine.fingerprint: equal content, equal fingerprint; any change, another one. Large
collections are described by a digest (core.engine.fingerprint.BIG): the same rules hold for them,
and no value of a user's can stand for one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine.fingerprint import BIG, canonical, fingerprint_of

#: A few items, repeated past BIG (hypothesis draws the few; BIG of them would be too many).
SEED = st.lists(st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
                          st.binary(max_size=3)),
                min_size=1, max_size=12)  # fmt: skip


def _big(seed: list[object], extra: int) -> list[object]:
    return [seed[i % len(seed)] for i in range(BIG + extra)]


@settings(max_examples=40, deadline=None)
@given(seed=SEED, extra=st.integers(1, 40), at=st.integers(0, BIG))
def test_a_big_list_hashes_by_content(seed: list[object], extra: int, at: int) -> None:
    items = _big(seed, extra)
    assert fingerprint_of(items) == fingerprint_of(list(items))
    assert fingerprint_of(items) != fingerprint_of(tuple(items))
    changed = list(items)
    changed[at] = ("another", changed[at])
    assert fingerprint_of(changed) != fingerprint_of(items)
    assert fingerprint_of(items[:-1]) != fingerprint_of(items)


@settings(max_examples=40, deadline=None)
@given(seed=st.lists(st.floats(allow_nan=False), min_size=1, max_size=12),
       extra=st.integers(1, 40), at=st.integers(0, BIG))  # fmt: skip
def test_a_big_score_column_hashes_by_its_values(seed: list[float], extra: int, at: int) -> None:
    scores: list[float] = _big(seed, extra)  # type: ignore[assignment]
    assert fingerprint_of(scores) == fingerprint_of([float(x) for x in scores])
    changed = list(scores)
    changed[at] = -changed[at] if changed[at] else 1.0  # (-0.0 is another value, as in repr)
    assert fingerprint_of(changed) != fingerprint_of(scores)
    as_ints = [int(x) if x.is_integer() else x for x in scores]
    if as_ints != scores or any(type(x) is int for x in as_ints):
        assert fingerprint_of(as_ints) != fingerprint_of(scores)


def test_a_big_dict_or_set_hashes_whatever_its_order() -> None:
    vocab = {f"t{i}": i for i in range(3 * BIG)}
    backwards = dict(reversed(list(vocab.items())))
    assert fingerprint_of(vocab) == fingerprint_of(backwards)
    assert fingerprint_of(set(vocab)) == fingerprint_of(set(backwards))
    backwards["t0"] = 1
    assert fingerprint_of(vocab) != fingerprint_of(backwards)


def test_no_user_value_stands_for_a_digest() -> None:
    """A user's list holding a digest's very atoms is still a list of them."""
    big = list(range(BIG + 5))
    form = canonical(big)
    assert form[0] == "digest"
    lookalikes = [list(form), tuple(form), [tuple(form)], [form[1]], {"digest": form[1]},
                  (form[0], list(form[1])), [("digest", *form[1])]]  # fmt: skip
    for lookalike in lookalikes:
        assert fingerprint_of(lookalike) != fingerprint_of(big)
        assert fingerprint_of([lookalike]) != fingerprint_of([big])


def test_a_collection_reached_twice_is_described_alike() -> None:
    column = [float(i) / 7 for i in range(BIG * 2)]
    shared = {"a": column, "b": column}
    copies = {"a": list(column), "b": list(column)}
    assert fingerprint_of(shared) == fingerprint_of(copies)


def test_a_fingerprint_survives_moving_a_class_to_another_module() -> None:
    """Built-in chat formats and links key on fingerprints: moving a module (as the layers
    of issue 37 did) must not change them. The OpenAI presets keep the keys of
    core.chat.formats.FORMATS."""
    from core.chat.formats import FORMATS
    from core.formats.presets import load_preset

    class Stage:
        def __init__(self) -> None:
            self.width = 3

    here = fingerprint_of(Stage(), Stage)
    Stage.__module__ = "somewhere.else"
    assert fingerprint_of(Stage(), Stage) == here
    assert {load_preset(n).fingerprint() for n in ("cl100k_base", "o200k_base")} <= set(FORMATS)
