"""Kubernetes manifests from job specs: the sample multi-node specs become an Indexed Job plus a
headless Service, and each pod's command, run by a real /bin/sh with the env the pod would get,
hands the launcher the right rendezvous flags (fake torchrun/deepspeed/accelerate print their argv)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from k8shelpers import pod_env
from paths import DATA as TEST_DATA
from paths import SAMPLES

from yanflow_tui.backends.kubernetes import manifests as m
from yanflow_tui.errors import BackendError
from yanflow_tui.model import JobKind, Mount
from yanflow_tui.spec import load_spec, parse_spec

SITE = TEST_DATA / "k8s"  # samples as one site pins them: PVCs, a GPU product

NS = "ml"


def deserialize(obj: dict, klass: str):
    """The official client's own model classes accept the shape (required fields enforced)."""
    from kubernetes.client import ApiClient

    return ApiClient()._ApiClient__deserialize(json.loads(json.dumps(obj)), klass)


@pytest.fixture
def fake_launchers(tmp_path) -> Path:
    """torchrun, deepspeed and accelerate that print their argv as JSON."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("torchrun", "deepspeed", "accelerate"):
        exe = bin_dir / name
        exe.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv))\n")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def run_pod(container: dict, index: int, bin_dir: Path) -> list[str]:
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(bin_dir.parent)}
    env.update(pod_env(container, index))
    assert container["command"][:2] == ["/bin/sh", "-c"]
    out = subprocess.run(container["command"], env=env, capture_output=True, text=True, timeout=30, check=True)
    argv = json.loads(out.stdout)
    argv[0] = Path(argv[0]).name
    return argv


def test_torchrun_sample_is_an_indexed_job_with_a_headless_service(fake_launchers):
    spec = load_spec(SITE / "torchrun-site.yaml")
    job, service = m.manifests(spec, "0123456789abcdef", NS, "alice")
    name = job["metadata"]["name"]
    assert re.fullmatch(r"llama-finetune-2x8-01234567", name)
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 2
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400
    pod = job["spec"]["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == name
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {m.JOB_LABEL: name}
    assert job["spec"]["template"]["metadata"]["labels"][m.JOB_LABEL] == name
    # whole nodes: every GPU of a node, and never two pods on one node
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    term = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term == {"labelSelector": {"matchLabels": {m.JOB_LABEL: name}}, "topologyKey": "kubernetes.io/hostname"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu" and pod["priorityClassName"] == "training"
    assert pod["volumes"] == [
        {"name": "vol-0", "persistentVolumeClaim": {"claimName": "team-datasets"}},
        {"name": "vol-1", "persistentVolumeClaim": {"claimName": "team-home"}},
    ]
    assert container["volumeMounts"][0] == {
        "name": "vol-0",
        "mountPath": "/data",
        "readOnly": True,
        "subPath": "imagenet",
    }
    assert container["workingDir"] == "/workspace/project"
    # honest API shapes, as the client's own models read them
    assert deserialize(job, "V1Job").spec.completion_mode == "Indexed"
    assert deserialize(service, "V1Service").spec.cluster_ip == "None"

    for rank in (0, 1):
        env = pod_env(container, rank)
        assert env["MASTER_ADDR"] == f"{name}-0.{name}.{NS}.svc"
        assert (env["MASTER_PORT"], env["NNODES"], env["NODE_RANK"]) == ("29500", "2", str(rank))
        assert (env["NPROC_PER_NODE"], env["WORLD_SIZE"]) == ("8", "16")
        assert run_pod(container, rank, fake_launchers) == [
            "torchrun",
            "--nnodes=2",
            f"--node_rank={rank}",
            "--nproc_per_node=8",
            f"--master_addr={name}-0.{name}.{NS}.svc",
            "--master_port=29500",
            "train.py",
            "--config",
            "configs/finetune.yaml",
            "--epochs",
            "3",
        ]


def test_deepspeed_and_accelerate_variants_get_their_own_rendezvous_flags(fake_launchers):
    ds_job, _ = m.manifests(load_spec(SAMPLES / "k8s-deepspeed.yaml"), "feedfacecafe", NS)
    name = ds_job["metadata"]["name"]
    master = f"{name}-0.{name}.{NS}.svc"
    argv = run_pod(ds_job["spec"]["template"]["spec"]["containers"][0], 1, fake_launchers)
    hostfile = argv.pop(1)  # --no_ssh still takes the node list from a hostfile, written in the pod
    assert hostfile.startswith(f"--hostfile={fake_launchers.parent}/")
    assert Path(hostfile.partition("=")[2]).read_text() == "node0 slots=8\nnode1 slots=8\n"
    assert argv == [
        "deepspeed",
        "--num_nodes=2",
        "--num_gpus=8",
        "--node_rank=1",
        f"--master_addr={master}",
        "--master_port=29500",
        "--no_ssh",
        "train.py",
        "--deepspeed",
        "--deepspeed_config",
        "configs/ds_zero3.json",
    ]

    acc_job, _ = m.manifests(load_spec(SAMPLES / "k8s-accelerate.yaml"), "feedfacecafe", NS)
    name = acc_job["metadata"]["name"]
    master = f"{name}-0.{name}.{NS}.svc"
    argv = run_pod(acc_job["spec"]["template"]["spec"]["containers"][0], 0, fake_launchers)
    assert argv == [
        "accelerate",
        "launch",
        "--multi_gpu",
        "--num_machines=2",
        "--num_processes=16",
        "--machine_rank=0",
        f"--main_process_ip={master}",
        "--main_process_port=29500",
        "train.py",
        "--config",
        "configs/finetune.yaml",
        "--epochs",
        "3",
    ]


def test_hostile_names_and_argv_words_never_become_shell_code(tmp_path, fake_launchers):
    marker = tmp_path / "pwned"
    spec = parse_spec(
        json.dumps(
            {
                "name": f'x"; touch {marker}; echo "$(touch {marker})',
                "kind": "multi-node",
                "launcher": "torchrun",
                "resources": {"nodes": 2, "gpus": 1},
                "command": ["train.py", f"$(touch {marker})", "a b", "it's"],
                "env": {"EVIL": f"$(touch {marker})"},
                "kubernetes": {"master_port": 1234},
            }
        )
    )
    job, service = m.manifests(spec, "abcdef012345", NS)
    name = job["metadata"]["name"]
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 52
    container = job["spec"]["template"]["spec"]["containers"][0]
    script = container["command"][2]
    assert "touch" not in script.split("train.py")[0]  # the launcher prefix holds no user value
    argv = run_pod(container, 0, fake_launchers)
    assert argv[-4:] == ["train.py", f"$(touch {marker})", "a b", "it's"]
    assert "--master_port=1234" in argv
    assert not marker.exists()
    assert job["metadata"]["annotations"]["yanflow.io/name"] == spec.name  # shown as given, never run


def test_single_job_shell_line_nfs_and_hostpath_mounts():
    spec = load_spec(SITE / "single-site.yaml")
    spec = replace(spec, mounts=spec.mounts + (Mount("/scratch", "/scratch"),))
    (job,) = m.manifests(spec, "0" * 16, NS)
    pod = job["spec"]["template"]["spec"]
    assert "completionMode" not in job["spec"] and "affinity" not in pod and "subdomain" not in pod
    container = pod["containers"][0]
    assert container["command"] == ["/bin/sh", "-c", "python eval.py --checkpoint /ckpt/last.pt"]
    assert not any(e["name"] == "MASTER_ADDR" for e in container["env"])
    assert pod["volumes"] == [
        {"name": "vol-0", "nfs": {"server": "nfs.internal", "path": "/export/checkpoints"}},
        {"name": "vol-1", "hostPath": {"path": "/scratch"}},
    ]
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": "1", "cpu": "8", "memory": "32768Mi"},
        "requests": {"cpu": "8", "memory": "32768Mi"},
    }
    deserialize(job, "V1Job")


@pytest.mark.parametrize(
    "source, message",
    [
        ("relative/dir", "expected pvc:CLAIM"),
        ("pvc:Bad_Claim", "not a valid PVC name"),
        ("nfs://server-only", "expected nfs://SERVER/PATH"),
    ],
)
def test_bad_mount_sources_are_refused_with_the_field(source, message):
    spec = replace(load_spec(SAMPLES / "k8s-single.yaml"), mounts=(Mount(source, "/x"),))
    with pytest.raises(BackendError, match=rf"mounts\[0\]\.source: {message}"):
        m.check(spec)


def test_launcher_variables_cannot_be_overridden_through_env():
    spec = load_spec(SAMPLES / "k8s-torchrun.yaml")
    with pytest.raises(BackendError, match="NODE_RANK"):
        m.check(replace(spec, env={"NODE_RANK": "3"}))


def test_yaml_rendering_round_trips():
    spec = load_spec(SAMPLES / "k8s-torchrun.yaml")
    objects = m.manifests(spec, m.content_token(spec), NS)
    assert list(yaml.safe_load_all(m.to_yaml(objects))) == objects
    assert m.content_token(spec) == m.content_token(load_spec(SAMPLES / "k8s-torchrun.yaml"))
    assert spec.kind is JobKind.MULTI_NODE
