"""core.engine.basics: the garbage collector paused around bulk work (loading tables, the merge loop)."""

from __future__ import annotations

import gc

import pytest

from core.engine.basics import gc_paused


def test_gc_paused_restores_the_previous_state() -> None:
    assert gc.isenabled()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outer block turns it back on
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off: it stays off
    finally:
        gc.enable()


def test_gc_paused_is_also_a_decorator() -> None:
    @gc_paused()
    def inside() -> bool:
        return gc.isenabled()

    assert inside() is False and gc.isenabled()
