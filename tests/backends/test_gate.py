"""The read-only gate: submit/cancel are final and refuse before any backend I/O."""

from __future__ import annotations

import pytest
from jobhelpers import cleanup_state_dir

from yanflow_tui import cli
from yanflow_tui.backends.base import Backend, Capabilities, Gate
from yanflow_tui.backends.local.backend import LocalBackend
from yanflow_tui.cli.verbs import VERB_HELP
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError, ReadOnlyError
from yanflow_tui.model import JobKind
from yanflow_tui.spec import parse_spec

SPEC = parse_spec("name: gated\ncommand: 'true'\n")


class SpyBackend(Backend):
    kind = "spy"
    capabilities = Capabilities(submit=True, cancel=True, job_kinds=frozenset({JobKind.SINGLE}), actions=("pause",))

    def __init__(self, config):
        super().__init__(config)
        self.calls: list[tuple] = []

    async def list_jobs(self):
        return []

    async def list_nodes(self):
        return []

    async def _submit(self, spec):
        self.calls.append(("submit", spec.name))
        return "42"

    async def _cancel(self, job_id):
        self.calls.append(("cancel", job_id))

    async def _perform(self, job_id, action, args):
        self.calls.append((action, job_id))


@pytest.mark.parametrize("method", ["submit", "cancel", "perform"])
def test_overriding_a_gated_method_fails_at_class_creation(method):
    async def sneaky(self, *args):
        return "bypassed"

    with pytest.raises(TypeError, match=f"overrides {method}\\(\\)"):
        type("Sneaky", (SpyBackend,), {method: sneaky})


def test_overriding_gated_method_of_a_real_backend_fails():
    with pytest.raises(TypeError):

        class SneakyLocal(LocalBackend):
            async def cancel(self, job_id):
                return None


def test_implementing_private_methods_is_fine():
    class Fine(SpyBackend):
        async def _submit(self, spec):
            return "1"

    assert issubclass(Fine, Backend)


async def test_open_gate_calls_through():
    spy = SpyBackend(ClusterConfig("c", "spy"))
    assert await spy.submit(SPEC) == "42"
    await spy.cancel("7")
    assert spy.calls == [("submit", "gated"), ("cancel", "7")]


async def test_closed_gate_refuses_before_any_call():
    spy = SpyBackend(ClusterConfig("c", "spy", read_only=True))
    assert spy.read_only
    with pytest.raises(ReadOnlyError, match="cluster 'c' is read-only: submit refused"):
        await spy.submit(SPEC)
    with pytest.raises(ReadOnlyError, match="cluster 'c' is read-only: cancel refused"):
        await spy.cancel("7")
    assert spy.calls == []


async def test_gate_comes_before_capability_and_spec_checks():
    class NoSubmit(SpyBackend):
        capabilities = Capabilities()

    closed = NoSubmit(ClusterConfig("c", "spy", read_only=True))
    with pytest.raises(ReadOnlyError):
        await closed.submit(parse_spec("name: x\nkind: slurm\ncommand: c\n"))
    opened = NoSubmit(ClusterConfig("c", "spy"))
    with pytest.raises(BackendError, match="does not accept submissions"):
        await opened.submit(SPEC)
    with pytest.raises(BackendError, match="cannot cancel jobs"):
        await opened.cancel("1")
    assert closed.calls == opened.calls == []


def test_gate_object():
    Gate("c", False).check("submit")
    with pytest.raises(ReadOnlyError):
        Gate("c", True).check("submit")


async def test_closed_gate_on_local_backend_touches_nothing(tmp_path):
    backend = LocalBackend(ClusterConfig("local", "local", read_only=True), state_dir=tmp_path / "state")
    try:
        with pytest.raises(ReadOnlyError):
            await backend.submit(SPEC)
        with pytest.raises(ReadOnlyError):
            await backend.cancel("1")
        assert backend.store.all() == []
        assert list((tmp_path / "state" / "jobs").iterdir()) == []
    finally:
        await backend.close()


# -- through the CLI, in-process, with a spy in the registry ---------------------------------------


class SpyLocal(LocalBackend):
    calls: list[tuple] = []

    async def _submit(self, spec):
        SpyLocal.calls.append(("submit", spec.name))
        return await super()._submit(spec)

    async def _cancel(self, job_id):
        SpyLocal.calls.append(("cancel", job_id))
        return await super()._cancel(job_id)


@pytest.fixture
def spy_cli(home, tmp_path, monkeypatch, register_backend):
    """A config with one local cluster whose backend class is SpyLocal; returns (config path, spec path)."""
    monkeypatch.setattr(SpyLocal, "calls", [])
    register_backend(SpyLocal, "local")
    config = tmp_path / "config.yaml"
    config.write_text("clusters:\n  - name: here\n    kind: local\n")
    spec = tmp_path / "job.yaml"
    spec.write_text("name: gated\ncommand: 'true'\n")
    yield config, spec
    cleanup_state_dir(home / ".local" / "state" / "yanflow")


@pytest.mark.parametrize(
    "argv",
    [
        ["--read-only", "submit", "{spec}"],
        ["submit", "{spec}", "--read-only"],
        ["--read-only", "cancel", "1"],
        ["cancel", "1", "--read-only"],
    ],
)
def test_cli_read_only_flag_refuses(spy_cli, capsys, argv):
    config, spec = spy_cli
    argv = [a.format(spec=spec) for a in argv]
    code = cli.main(["--config", str(config), *argv])
    out, err = capsys.readouterr()
    assert code != 0
    action = "submit" if "submit" in argv else "cancel"
    assert err.splitlines() == [f"yanflow-tui: error: cluster 'here' is read-only: {action} refused"]
    assert out == ""
    assert SpyLocal.calls == []


@pytest.mark.parametrize("argv", [["submit", "{spec}"], ["cancel", "1"]])
def test_cli_read_only_config_refuses(spy_cli, tmp_path, capsys, argv):
    _, spec = spy_cli
    config = tmp_path / "ro.yaml"
    config.write_text("read_only: true\nclusters:\n  - name: here\n    kind: local\n")
    code = cli.main(["--config", str(config), *[a.format(spec=spec) for a in argv]])
    _, err = capsys.readouterr()
    assert code != 0
    assert "read-only" in err and "refused" in err
    assert SpyLocal.calls == []


def test_cli_read_only_cluster_refuses(spy_cli, tmp_path, capsys):
    _, spec = spy_cli
    config = tmp_path / "ro.yaml"
    config.write_text("clusters:\n  - name: here\n    kind: local\n    read_only: true\n")
    assert cli.main(["--config", str(config), "submit", str(spec)]) != 0
    assert "cluster 'here' is read-only: submit refused" in capsys.readouterr().err
    assert SpyLocal.calls == []


def test_cli_without_read_only_reaches_the_backend(spy_cli, capsys):
    """Control for the tests above: the same commands do reach the spy when the gate is open."""
    config, spec = spy_cli
    assert cli.main(["--config", str(config), "submit", str(spec)]) == 0
    job_id = capsys.readouterr().out.strip()
    assert job_id.isdigit()
    assert cli.main(["--config", str(config), "cancel", "999"]) != 0  # no such job, but it got through
    assert "no job '999'" in capsys.readouterr().err
    assert SpyLocal.calls == [("submit", "gated"), ("cancel", "999")]


async def test_registered_spy_kind_behind_a_read_only_hub(register_backend):
    """``registry.registered`` plus the hub: the config kinds are bypassed by building the Config directly."""
    from yanflow_tui.config import Config
    from yanflow_tui.hub import Hub

    register_backend(SpyBackend, "spy")  # the registration is undone afterwards
    hub = Hub(Config(clusters=(ClusterConfig("s", "spy"),)).with_read_only())
    backend = hub.backend("s")
    assert type(backend) is SpyBackend
    with pytest.raises(ReadOnlyError):
        await hub.call(backend.submit(SPEC))
    with pytest.raises(ReadOnlyError):
        await hub.call(backend.cancel("1"))
    assert backend.calls == []


async def test_extra_actions_pass_the_same_gate():
    spy = SpyBackend(ClusterConfig("c", "spy"))
    await spy.perform("7", "pause")
    with pytest.raises(BackendError, match="cannot activate"):
        await spy.perform("7", "activate")
    assert spy.calls == [("pause", "7")]
    closed = SpyBackend(ClusterConfig("c", "spy", read_only=True))
    with pytest.raises(ReadOnlyError, match="read-only: pause refused"):
        await closed.perform("7", "pause")
    assert closed.calls == []


# -- the job verbs beyond cancel (resubmit, hold, release, requeue, edit, signal) ------------------


class SpyListing(SpyLocal):
    """Records reads too: a refused verb must not even look for the job's cluster."""

    async def list_jobs(self):
        SpyLocal.calls.append(("list_jobs",))
        return await super().list_jobs()


VERB_ARGV = {"edit": ["--time", "01:00:00"], "signal": ["--signal", "KILL"], "resubmit": ["--more"]}


@pytest.mark.parametrize("verb", list(VERB_HELP))
@pytest.mark.parametrize("where", ["flag", "config", "cluster"])
def test_cli_read_only_refuses_every_verb_before_any_io(spy_cli, tmp_path, capsys, register_backend, verb, where):
    register_backend(SpyListing, "local")
    config = tmp_path / "two.yaml"
    body = "clusters:\n  - name: here\n    kind: local\n  - name: there\n    kind: local\n"
    if where == "config":
        body = "read_only: true\n" + body
    elif where == "cluster":
        body = body.replace("kind: local\n", "kind: local\n    read_only: true\n")
    config.write_text(body)
    argv = ["--config", str(config), *(["--read-only"] if where == "flag" else []), verb, "7", *VERB_ARGV.get(verb, [])]
    assert cli.main(argv) != 0
    err = capsys.readouterr().err
    assert err.splitlines() == [f"yanflow-tui: error: cluster 'here' is read-only: {verb} refused"]
    assert SpyLocal.calls == []  # not even a read to find the job's cluster


def test_cli_verbs_reach_the_backend_when_the_gate_is_open(spy_cli, capsys):
    """Control for the test above: the verb gets past the gate to the backend's capability check."""
    config, _ = spy_cli
    assert cli.main(["--config", str(config), "hold", "7"]) != 0
    assert "cannot hold jobs" in capsys.readouterr().err


async def test_perform_arguments_are_checked_after_the_gate_and_before_the_backend():
    spy = SpyBackend(ClusterConfig("c", "spy"))
    with pytest.raises(BackendError, match="pause takes no signal"):
        await spy.perform("7", "pause", {"signal": "KILL"})
    assert spy.calls == []
    closed = SpyBackend(ClusterConfig("c", "spy", read_only=True))
    with pytest.raises(ReadOnlyError):
        await closed.perform("7", "pause", {"signal": "KILL"})
