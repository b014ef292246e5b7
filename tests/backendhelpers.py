"""Plugging backends into the registry for a test: ``register_backend`` (any class or ``"module:Class"``
under any kind) and ``fake_backend`` (the in-memory fake as kind ``fake``). Both go through the public
``registry.registered``, so whatever a kind meant before comes back after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from fakes.backend import FakeBackend

from yanflow_tui.backends import registry
from yanflow_tui.backends.base import Backend

RegisterBackend = Callable[..., "type[Backend] | str"]


@pytest.fixture
def register_backend() -> Iterator[RegisterBackend]:
    """``register_backend(target, kind=None)``: ``target`` answers for ``kind`` (a class's own ``kind`` by
    default) until the test ends; returns ``target``. The fakes' ``instances`` list starts empty."""
    FakeBackend.instances.clear()
    with ExitStack() as stack:

        def register(target: type[Backend] | str, kind: str | None = None) -> type[Backend] | str:
            if kind is None:
                assert isinstance(target, type), "a 'module:Class' target needs its kind"
                kind = target.kind
            stack.enter_context(registry.registered(kind, target))
            return target

        yield register
    FakeBackend.instances.clear()


@pytest.fixture
def fake_backend(register_backend: RegisterBackend) -> type[FakeBackend]:
    """The in-memory fake, registered as kind ``fake``; its instances are in ``FakeBackend.instances``."""
    register_backend(FakeBackend)
    return FakeBackend
