"""Config: located errors, file location precedence, and cluster auto-discovery."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from jobhelpers import run_cli

from yanflow_tui.config import ClusterConfig, Config, discover, load_config, parse_config
from yanflow_tui.errors import ConfigError, SpecError
from yanflow_tui.locations import default_config_path, private_file, state_dir


def cluster_config(name: str, kind: str = "local") -> str:
    return f"clusters:\n  - name: {name}\n    kind: {kind}\n"


def names(config: Config) -> list[str]:
    return [c.name for c in config.clusters]


def base_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "h"
    home.mkdir(exist_ok=True)
    empty = tmp_path / "emptybin"
    empty.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": str(empty)}


# -- parsing -------------------------------------------------------------------------------------


def test_full_config():
    config = parse_config(
        """\
read_only: false
refresh_seconds: 2
theme: textual-light
keymap: {cancel-job: x, quit: ctrl+q}
clusters:
  - name: here
    kind: local
  - name: hpc
    kind: slurm
    ssh: alice@login
    partition: gpu
    read_only: true
    refresh_seconds: 10
    description: the big one
""",
        "c.yaml",
    )
    assert names(config) == ["here", "hpc"]
    here, hpc = config.clusters
    assert here == ClusterConfig("here", "local", refresh_seconds=2.0)
    assert hpc.read_only is True
    assert hpc.refresh_seconds == 10.0
    assert hpc.options == {"ssh": "alice@login", "partition": "gpu"}
    assert hpc.description == "the big one"
    assert config.theme == "textual-light"
    assert config.keymap == {"cancel-job": "x", "quit": "ctrl+q"}
    assert config.source == "c.yaml"
    assert config.cluster("hpc") is hpc


def test_global_read_only_closes_every_cluster():
    config = parse_config(
        "read_only: true\n" + cluster_config("a") + "  - name: b\n    kind: slurm\n    read_only: false\n", "c.yaml"
    )
    assert config.read_only is True
    assert all(c.read_only for c in config.clusters)


def test_with_read_only():
    config = parse_config(cluster_config("a"), "c.yaml")
    assert not config.clusters[0].read_only
    closed = config.with_read_only()
    assert closed.read_only and closed.clusters[0].read_only
    assert not config.clusters[0].read_only  # the original is untouched


def test_unknown_cluster_name():
    config = parse_config(cluster_config("a"), "c.yaml")
    with pytest.raises(ConfigError) as info:
        config.cluster("b")
    assert str(info.value) == "no cluster named 'b' (configured: a)"


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "refresh_seconds: fast\n" + cluster_config("a"),
            ['c.yaml:1: refresh_seconds: expected a number >= 0.5, got "fast"'],
        ),
        ("read_ony: true\n" + cluster_config("a"), ['c.yaml:1: read_ony: unknown key; did you mean "read_only"?']),
        (
            "read_only: yes please\n" + cluster_config("a"),
            ['c.yaml:1: read_only: expected true or false, got "yes please"'],
        ),
        (
            "clusters:\n  - name: a\n    kind: slurm\n    sssh: login\n",
            ['c.yaml:4: clusters[0].sssh: unknown key; did you mean "ssh"?'],
        ),
        (
            "clusters:\n  - name: a\n    kind: slrum\n",
            [
                'c.yaml:3: clusters[0].kind: expected one of local, slurm, kubernetes, determined, got "slrum"; '
                'did you mean "slurm"?'
            ],
        ),
        ("clusters:\n  - name: a\n", ["c.yaml:2: clusters[0].kind: required field is missing"]),
        ("clusters:\n  - kind: local\n", ["c.yaml:2: clusters[0].name: required field is missing"]),
        (
            "clusters:\n  - name: a\n    kind: local\n    ssh: x\n",
            [
                "c.yaml:4: clusters[0].ssh: unknown key; expected one of: name, kind, read_only, refresh_seconds, "
                "description, defaults, images, metrics, storage, container"
            ],
        ),
        (
            cluster_config("a") + "  - name: a\n    kind: local\n",
            ["c.yaml:4: clusters[1].name: duplicate cluster name 'a'"],
        ),
        ("clusters: local\n", ["c.yaml:1: clusters: expected a list of clusters"]),
        ("clusters: []\n", ["c.yaml:1: clusters: no clusters configured"]),
        ("clusters:\n  - local\n", ["c.yaml:2: clusters[0]: expected a mapping with name and kind"]),
        (
            "clusters:\n  - name: a\n    kind: local\n    refresh_seconds: 0\n",
            ["c.yaml:4: clusters[0].refresh_seconds: expected a number >= 0.5, got 0"],
        ),
        ("keymap: {quit: [q]}\n" + cluster_config("a"), ["c.yaml:1: keymap.quit: expected text, got a list"]),
        ("all_users: maybe\n" + cluster_config("a"), ['c.yaml:1: all_users: expected true or false, got "maybe"']),
        ("clusters: [\n", None),
    ],
)
def test_config_errors_are_located(text, expected):
    with pytest.raises(SpecError) as info:
        parse_config(text, "c.yaml")
    if expected is None:
        assert str(info.value).startswith("c.yaml:")
        assert "YAML syntax error" in str(info.value)
    else:
        assert str(info.value).splitlines() == expected


def test_config_error_from_real_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("clusters:\n  - name: a\n    kind: slurm\n    sssh: login\n")
    with pytest.raises(SpecError) as info:
        load_config(str(path), env={})
    assert str(info.value) == f'{path}:4: clusters[0].sssh: unknown key; did you mean "ssh"?'


def test_config_error_through_cli(home, tmp_path):
    path = tmp_path / "bad-config.yaml"
    path.write_text("refresh_seconds: fast\n" + cluster_config("a"))
    result = run_cli("--config", str(path), "jobs")
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        f'yanflow-tui: error: {path}:1: refresh_seconds: expected a number >= 0.5, got "fast"'
    ]
    assert "Traceback" not in result.stderr


def test_missing_explicit_config_is_an_error(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(str(missing), env={})
    assert str(info.value) == f"config file not found: {missing}"
    with pytest.raises(ConfigError):
        load_config(None, env={"YANFLOW_CONFIG": str(missing)})


def test_missing_explicit_config_through_cli(home, tmp_path):
    result = run_cli("--config", str(tmp_path / "missing.yaml"), "jobs")
    assert result.returncode != 0
    assert result.stderr.splitlines() == [f"yanflow-tui: error: config file not found: {tmp_path / 'missing.yaml'}"]


# -- location precedence --------------------------------------------------------------------------


@pytest.fixture
def three_configs(tmp_path):
    env = base_env(tmp_path)
    flag = tmp_path / "flag.yaml"
    flag.write_text(cluster_config("from-flag"))
    envfile = tmp_path / "env.yaml"
    envfile.write_text(cluster_config("from-env"))
    default = Path(env["XDG_CONFIG_HOME"]) / "yanflow" / "config.yaml"
    default.parent.mkdir(parents=True)
    default.write_text(cluster_config("from-xdg"))
    return env, flag, envfile, default


def test_precedence_flag_over_env_over_default(three_configs):
    env, flag, envfile, default = three_configs
    assert names(load_config(str(flag), env={**env, "YANFLOW_CONFIG": str(envfile)})) == ["from-flag"]
    assert names(load_config(None, env={**env, "YANFLOW_CONFIG": str(envfile)})) == ["from-env"]
    assert load_config(None, env={**env, "YANFLOW_CONFIG": str(envfile)}).source == str(envfile)
    assert names(load_config(None, env=env)) == ["from-xdg"]
    assert load_config(None, env=env).source == str(default)


def test_default_path_follows_xdg(tmp_path):
    assert default_config_path({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path("/x/yanflow/config.yaml")
    assert default_config_path({"HOME": "/h"}) == Path("/h/.config/yanflow/config.yaml")
    # A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    assert default_config_path({"HOME": "/h", "XDG_CONFIG_HOME": "rel"}) == Path("/h/.config/yanflow/config.yaml")


def test_no_file_anywhere_discovers(tmp_path):
    config = load_config(None, env=base_env(tmp_path))
    assert config.source == "auto-discovered"
    assert [(c.name, c.kind) for c in config.clusters] == [("local", "local")]


def test_precedence_through_cli(home, tmp_path, monkeypatch):
    flag = tmp_path / "flag.yaml"
    flag.write_text(cluster_config("from-flag"))
    envfile = tmp_path / "env.yaml"
    envfile.write_text(cluster_config("from-env"))
    default = home / ".config" / "yanflow" / "config.yaml"
    default.parent.mkdir(parents=True)
    default.write_text(cluster_config("from-xdg"))

    def clusters(*args: str) -> set[str]:
        result = run_cli(*args, "nodes", "--json")
        assert result.returncode == 0, result.stderr
        return {n["cluster"] for n in json.loads(result.stdout)["nodes"]}

    assert clusters() == {"from-xdg"}
    monkeypatch.setenv("YANFLOW_CONFIG", str(envfile))
    assert clusters() == {"from-env"}
    assert clusters("--config", str(flag)) == {"from-flag"}


# -- discovery ------------------------------------------------------------------------------------


def kinds(found: list[ClusterConfig]) -> list[str]:
    return [c.kind for c in found]


def test_discover_local_only(tmp_path):
    assert kinds(discover(base_env(tmp_path))) == ["local"]


def fake_squeue(tmp_path: Path, executable: bool = True) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text("#!/bin/sh\nexit 0\n")
    squeue.chmod(0o755 if executable else 0o644)
    return bin_dir


def test_discover_slurm_when_squeue_on_path(tmp_path):
    env = base_env(tmp_path)
    env["PATH"] = os.pathsep.join([env["PATH"], str(fake_squeue(tmp_path))])
    found = discover(env)
    assert kinds(found) == ["local", "slurm"]
    assert found[1].name == "slurm"


def test_non_executable_squeue_is_not_slurm(tmp_path):
    env = base_env(tmp_path)
    env["PATH"] = str(fake_squeue(tmp_path, executable=False))
    assert kinds(discover(env)) == ["local"]


def test_discover_kubernetes_from_default_kubeconfig(tmp_path):
    env = base_env(tmp_path)
    kube = Path(env["HOME"]) / ".kube" / "config"
    kube.parent.mkdir()
    kube.write_text("apiVersion: v1\n")
    found = discover(env)
    assert kinds(found) == ["local", "kubernetes"]
    assert found[1].options == {"kubeconfig": str(kube)}


def test_discover_kubernetes_from_kubeconfig_variable(tmp_path):
    env = base_env(tmp_path)
    kube = tmp_path / "kc.yaml"
    kube.write_text("apiVersion: v1\n")
    env["KUBECONFIG"] = os.pathsep.join([str(tmp_path / "missing"), str(kube)])
    found = discover(env)
    assert kinds(found) == ["local", "kubernetes"]
    assert found[1].options == {"kubeconfig": str(kube)}
    env["KUBECONFIG"] = str(tmp_path / "missing")
    assert kinds(discover(env)) == ["local"]


def test_kube_directory_is_not_a_kubeconfig(tmp_path):
    env = base_env(tmp_path)
    (Path(env["HOME"]) / ".kube" / "config").mkdir(parents=True)
    assert kinds(discover(env)) == ["local"]


def test_discover_determined_from_det_master(tmp_path):
    env = base_env(tmp_path)
    env["DET_MASTER"] = "https://det.example:8080"
    found = discover(env)
    assert kinds(found) == ["local", "determined"]
    assert found[1].options == {"master": "https://det.example:8080"}


def test_discover_everything(tmp_path):
    env = base_env(tmp_path)
    env["PATH"] = str(fake_squeue(tmp_path))
    kube = Path(env["HOME"]) / ".kube" / "config"
    kube.parent.mkdir()
    kube.write_text("x")
    env["DET_MASTER"] = "det:8080"
    assert kinds(load_config(None, env=env).clusters) == ["local", "slurm", "kubernetes", "determined"]


def test_config_without_clusters_section_discovers(tmp_path):
    env = base_env(tmp_path)
    env["DET_MASTER"] = "det:8080"
    config = parse_config("refresh_seconds: 3\n", "c.yaml", env)
    assert kinds(config.clusters) == ["local", "determined"]
    assert config.refresh_seconds == 3.0


# -- locations ------------------------------------------------------------------------------------


def test_state_dir_is_private(tmp_path):
    path = state_dir({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "st")})
    assert path == tmp_path / "st" / "yanflow"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_private_file(tmp_path):
    target = tmp_path / "secret"
    private_file(target, "one")
    private_file(target, b"two")
    assert target.read_text() == "two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]


def test_yanflow_discover_limits_what_is_found(tmp_path):
    env = {"PATH": str(fake_squeue(tmp_path)), "DET_MASTER": "http://det:8080", "HOME": str(tmp_path)}
    assert [c.kind for c in discover(env)] == ["local", "slurm", "determined"]
    assert [c.kind for c in discover({**env, "YANFLOW_DISCOVER": "local,determined"})] == ["local", "determined"]


def test_all_users_starts_the_queue_on_everyones_jobs():
    assert parse_config("all_users: true\n" + cluster_config("a"), "c.yaml").all_users
    assert not parse_config(cluster_config("a"), "c.yaml").all_users


# -- per-cluster defaults for the Submit form -------------------------------------------------------


def test_cluster_defaults_are_spec_fields_kept_as_written():
    config = parse_config(
        cluster_config("hpc", "slurm")
        + """    partition: gpu
    defaults:
      kind: multi-node
      image: pytorch:2.4
      resources: {gpus: 8, memory: 64G}
      slurm: {time: 1:30:00, exclusive: true}
""",
        "c.yaml",
    )
    hpc = config.clusters[0]
    assert hpc.options == {"partition": "gpu"}  # the kind option stays an option
    assert hpc.defaults == {
        "kind": "multi-node",
        "image": "pytorch:2.4",
        "resources": {"gpus": 8, "memory": "64G"},
        "slurm": {"time": "1:30:00", "exclusive": True},
    }
    assert parse_config(cluster_config("a"), "c.yaml").clusters[0].defaults == {}


@pytest.mark.parametrize(
    "defaults, expected",
    [
        (
            "    defaults: 8\n",
            ["c.yaml:4: clusters[0].defaults: expected a mapping of spec fields, e.g. {resources: {gpus: 8}}"],
        ),
        (
            "    defaults:\n      resources: {gpus: eight}\n",
            ['c.yaml:5: clusters[0].defaults.resources.gpus: expected a whole number >= 0, got "eight"'],
        ),
        (
            "    defaults:\n      cluster: other\n",
            [
                "c.yaml:5: clusters[0].defaults.cluster: unknown key; expected one of: "
                "name, kind, command, image, workdir, outputs, resume, env, mounts, resources, launcher, "
                "description, slurm, kubernetes, determined, tensorboard"
            ],
        ),
        (
            "    defaults:\n      slurm:\n        partiton: gpu\n",
            ['c.yaml:6: clusters[0].defaults.slurm.partiton: unknown key; did you mean "partition"?'],
        ),
        (
            "    defaults:\n      kind: single\n      resources: {nodes: 2}\n",
            ["c.yaml:6: clusters[0].defaults.resources.nodes: a single job runs on exactly 1 node, got 2"],
        ),
    ],
)
def test_cluster_defaults_errors_are_located(defaults, expected):
    with pytest.raises(SpecError) as info:
        parse_config(cluster_config("hpc", "slurm") + defaults, "c.yaml")
    assert str(info.value).splitlines() == expected


def test_mouse_false_leaves_the_mouse_to_the_terminal():
    assert not parse_config("mouse: false\n" + cluster_config("a"), "c.yaml").mouse
    assert parse_config(cluster_config("a"), "c.yaml").mouse
    with pytest.raises((ConfigError, SpecError), match='c.yaml:1: mouse: expected true or false, got "off"'):
        parse_config("mouse: 'off'\n" + cluster_config("a"), "c.yaml")


def test_the_console_loads_a_broken_cluster_entry_as_a_cluster_in_error_and_keeps_the_others(tmp_path):
    from yanflow_tui.backends import registry
    from yanflow_tui.backends.registry import UnavailableBackend

    text = cluster_config("a") + "  - name: badkey\n    kind: slurm\n    sssh: login\n  - kind: local\n"
    with pytest.raises(SpecError):  # commands run from scripts stop at any problem
        parse_config(text, "c.yaml")
    config = parse_config(text, "c.yaml", lenient=True)
    assert [c.name for c in config.clusters] == ["a", "badkey", "clusters[2]"]
    assert config.clusters[0].problems == ()
    assert config.clusters[1].problems == ('c.yaml:6: clusters[1].sssh: unknown key; did you mean "ssh"?',)
    assert config.clusters[2].problems == ("c.yaml:7: clusters[2].name: required field is missing",)
    backend = registry.create(config.clusters[1])
    assert isinstance(backend, UnavailableBackend) and backend.reason == config.clusters[1].problems[0]
    with pytest.raises(SpecError):  # a problem outside the clusters still stops the console
        parse_config("refresh_seconds: fast\n" + text, "c.yaml", lenient=True)
