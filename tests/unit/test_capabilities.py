"""Capability flags are tied to overrides: a backend class that declares a flag without the method
behind it fails at its definition, naming the class, the flag and the method."""

from __future__ import annotations

import pytest

from yanflow_tui.backends.base import FLAG_METHODS, Backend, Capabilities
from yanflow_tui.model import JobKind


class Bare(Backend):
    kind = "bare"

    async def list_jobs(self):
        return []

    async def list_nodes(self):
        return []


async def _method(self, *args, **kwargs):
    return None


def _flag(flag: str) -> Capabilities:
    return Capabilities(**{flag: ("pause",) if flag == "actions" else True})


@pytest.mark.parametrize("flag", sorted(FLAG_METHODS))
def test_a_flag_without_its_override_fails_at_definition(flag):
    method = FLAG_METHODS[flag][0]
    with pytest.raises(
        TypeError, match=rf"^Mismatched declares capabilities\.{flag} but does not override {method}\(\)$"
    ):
        type("Mismatched", (Bare,), {"capabilities": _flag(flag)})


@pytest.mark.parametrize("flag", sorted(FLAG_METHODS))
def test_a_flag_with_its_overrides_is_fine(flag):
    cls = type("Matched", (Bare,), {"capabilities": _flag(flag), **dict.fromkeys(FLAG_METHODS[flag], _method)})
    assert getattr(cls.capabilities, flag)


def test_checkpoints_need_both_methods():
    with pytest.raises(TypeError, match=r"capabilities\.checkpoints but does not override download_checkpoint\(\)"):

        class HalfDone(Bare):
            capabilities = Capabilities(checkpoints=True)

            async def checkpoints(self, job_id):
                return []


def test_tagged_submit_needs_submit_tagged_not_submit():
    with pytest.raises(TypeError, match=r"capabilities\.submit_tags but does not override _submit_tagged\(\)"):

        class Untagged(Bare):
            capabilities = Capabilities(submit=True, submit_tags=True)

            async def _submit(self, spec):
                return "1"

    class Tagged(Bare):
        capabilities = Capabilities(submit=True, submit_tags=True)

        async def _submit_tagged(self, spec, tag, retry):
            return "1"

    assert Tagged.capabilities.submit_tags


def test_an_inherited_override_counts():
    class Parent(Bare):
        async def stream_logs(self, job_id, follow=False, stream=""):
            yield

    class Child(Parent):
        capabilities = Capabilities(logs=True)

    assert Child.capabilities.logs


def test_a_full_fake_backend_is_fine():
    class Full(Bare):
        capabilities = Capabilities(
            submit=True,
            cancel=True,
            logs=True,
            job_kinds=frozenset({JobKind.SINGLE}),
            actions=("pause",),
            metrics=True,
            checkpoints=True,
            raw_spec=True,
        )
        _submit = _cancel = _perform = metrics = checkpoints = download_checkpoint = raw_spec = _method

        async def stream_logs(self, job_id, follow=False, stream=""):
            yield

    assert Full.capabilities.metrics


def test_the_shipped_backends_match_their_flags():
    from yanflow_tui.backends import registry
    from yanflow_tui.backends.base import missing_overrides

    for kind in ("local", "slurm", "kubernetes"):  # determined needs its optional SDK
        assert missing_overrides(registry.backend_class(kind)) == []
