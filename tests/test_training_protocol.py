"""training.protocol: both managers offer every method of ``Manager``, with its parameters."""

from __future__ import annotations

import inspect

import pytest

from training.inpage import InPageTrainingManager
from training.manager import TrainingManager
from training.protocol import Manager

_METHODS = sorted(
    name for name, value in vars(Manager).items()
    if callable(value) and (not name.startswith("_") or name == "__contains__")
)


def _parameters(function: object) -> list[tuple[str, object]]:
    """Names and kinds of a method's parameters (defaults may differ: ``advance``'s budget)."""
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


def test_the_protocol_names_what_the_pages_call():
    assert _METHODS == sorted([
        "__contains__", "advance", "cancel", "forget", "pause", "resume", "shutdown", "snapshot",
        "status", "status_counts", "stop", "submit", "wait", "warm_up",
    ])
    assert "max_concurrent" in Manager.__annotations__


@pytest.mark.parametrize("cls", [TrainingManager, InPageTrainingManager])
@pytest.mark.parametrize("name", _METHODS)
def test_each_manager_has_each_method_with_its_parameters(cls, name):
    assert _parameters(getattr(cls, name)) == _parameters(getattr(Manager, name))


def test_both_managers_are_managers():
    server = TrainingManager(max_concurrent=1, prewarm=False)
    try:
        assert isinstance(server, Manager) and server.max_concurrent == 1
    finally:
        server.shutdown()
    tab = InPageTrainingManager()
    assert isinstance(tab, Manager) and tab.max_concurrent == 1
