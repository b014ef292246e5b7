"""``where`` and ``share`` on the two real loopback Slurm clusters, the Kubernetes emulator beside them
(issue 30 points 2-4): the site cluster filled with sleeping jobs (``where-fill-*``, cancelled after the
test), the test cluster idle for a one-GPU job: the idle one ranks first, the full one waits with
Slurm's own start estimate; a GPU type only one cluster has makes the others "never", saying why. My
share: fair-share and limits where there is accounting, a note where there is none, a namespace's
quota. Read-only: nothing mutating is sent (every command recorded at the transport, and no job of the
probe's name on either cluster; the emulator's request log for Kubernetes)."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
import yaml
from fakes.k8s_api import make_quota
from jobhelpers import run_cli
from k8shelpers import cluster as k8s_cluster
from sitehelpers import site_cluster, site_sbatch, site_slurm
from slurmhelpers import slurm, ssh_cluster
from waiting import wait_until

from yanflow_tui.backends.registry import create
from yanflow_tui.backends.slurm.transport import Transport
from yanflow_tui.placement_rank import place_all
from yanflow_tui.spec import spec_from_data

FILL_NODES = ("hx-n1", "hx-n2", "hx-n3")  # the site's GPU nodes, 4 h100 each


@pytest.fixture
def full_site(site_dir, site_jobs):
    """Every GPU of the site cluster held by a sleeping ``where-fill-N`` job (10 min limit), running."""
    ids = [
        site_sbatch(
            site_jobs,
            "-J",
            f"where-fill-{i}",
            "-p",
            "batch",
            "-w",
            node,
            "--gres=gpu:h100:4",
            "-t",
            "10",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 600",
        )
        for i, node in enumerate(FILL_NODES, start=1)
    ]

    def running() -> bool:
        out = site_slurm("squeue", "-h", "-j", ",".join(ids), "-o", "%T")
        return out.split() == ["RUNNING"] * len(ids)

    wait_until(running, timeout=60, what="the where-fill jobs running on every site GPU node")
    return ids


def config_file(tmp_path, kubeconfig=None, read_only: bool = False) -> str:
    entries = []
    for cfg in (ssh_cluster(), site_cluster()):
        entries.append({"name": cfg.name, "kind": "slurm", "ssh": cfg.options["ssh"], "read_only": read_only})
    if kubeconfig is not None:
        entries.append({"name": "k8s", "kind": "kubernetes", "kubeconfig": str(kubeconfig), "read_only": read_only})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"clusters": entries}))
    return str(path)


def spec_file(tmp_path, name: str, **slurm_section) -> str:
    path = tmp_path / f"{name}.yaml"
    data = {
        "name": name,
        "command": "sleep 5",
        "resources": {"gpus": 1, "cpus": 1, "memory": "1G"},
        "slurm": {"time": "00:05:00", **slurm_section},
    }
    path.write_text(yaml.safe_dump(data))
    return str(path)


def where_json(config: str, spec: str, *extra: str) -> dict:
    result = run_cli("--config", config, *extra, "where", spec, "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_idle_cluster_ranks_first_and_a_gpu_type_one_lacks_is_never(home, tmp_path, full_site, slurm_dir):
    config = config_file(tmp_path)
    answer = where_json(config, spec_file(tmp_path, "where-probe"))
    assert answer["errors"] == []
    ranked = [(e["cluster"], e["verdict"]) for e in answer["where"]]
    assert ranked == [("slurm-test", "now"), ("slurm-site", "waits")], answer
    site = answer["where"][1]
    start = datetime.fromisoformat(site["expected_start"])
    now = datetime.now(timezone.utc)
    assert now + timedelta(minutes=5) < start < now + timedelta(minutes=11), site  # the fill jobs' 10 min end
    assert "Slurm expects it to start at" in site["reason"] and "partition batch" in site["reason"]
    assert answer["where"][0]["nodes"] and answer["where"][0]["expected_start"]

    answer = where_json(config, spec_file(tmp_path, "where-h100", gpu_type="h100"))
    ranked = [(e["cluster"], e["verdict"]) for e in answer["where"]]
    assert ranked == [("slurm-site", "waits"), ("slurm-test", "never")], answer
    assert "no h100 GPUs; it has a100" in answer["where"][1]["reason"]
    assert answer["where"][1]["expected_start"] is None

    table = run_cli("--config", config, "where", spec_file(tmp_path, "where-a100", gpu_type="a100"), timeout=120)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["CLUSTER", "VERDICT", "START", "REASON"]
    assert lines[1].split()[:2] == ["slurm-test", "now"] and lines[2].split()[:3] == ["slurm-site", "never", "never"]
    assert "no a100 GPUs; it has h100" in lines[2]


def test_the_kubernetes_emulator_beside_them(home, tmp_path, full_site, slurm_dir, emulator, kubeconfig):
    emulator.add_node("k1", gpus=8)
    emulator.add_node("k2", gpus=8)
    config = config_file(tmp_path, kubeconfig)
    answer = where_json(config, spec_file(tmp_path, "where-k8s"))
    assert answer["errors"] == []
    assert [(e["cluster"], e["verdict"]) for e in answer["where"]] == [
        ("slurm-test", "now"),
        ("k8s", "now"),
        ("slurm-site", "waits"),
    ], answer
    answer = where_json(config, spec_file(tmp_path, "where-k8s-h100", gpu_type="h100"))
    ranked = [(e["cluster"], e["verdict"]) for e in answer["where"]]
    assert ranked[0] == ("slurm-site", "waits") and sorted(ranked[1:]) == [("k8s", "never"), ("slurm-test", "never")]
    k8s = next(e for e in answer["where"] if e["cluster"] == "k8s")
    assert "no NVIDIA-A100-SXM4-80GB" not in k8s["reason"] and "no h100 GPUs" in k8s["reason"], k8s
    # a quota whose GPUs are all in use: Kubernetes waits for it, behind the idle Slurm cluster
    emulator.put(
        "resourcequotas", make_quota("gpus", "ml", {"requests.nvidia.com/gpu": "4"}, {"requests.nvidia.com/gpu": "4"})
    )
    answer = where_json(config, spec_file(tmp_path, "where-k8s-quota"))
    k8s = next(e for e in answer["where"] if e["cluster"] == "k8s")
    assert k8s["verdict"] == "waits" and "ResourceQuota gpus in namespace ml: 4 of 4 GPUs in use" in k8s["reason"]
    assert answer["where"][0]["cluster"] == "slurm-test"
    assert emulator.mutations() == []  # nothing was created to answer


def test_share_with_and_without_accounting_and_a_quota(home, tmp_path, site_dir, slurm_dir, emulator, kubeconfig):
    emulator.put(
        "resourcequotas",
        make_quota(
            "compute",
            "ml",
            {"requests.nvidia.com/gpu": "8", "requests.cpu": "64", "requests.memory": "256Gi", "pods": "20"},
            {"requests.nvidia.com/gpu": "8", "requests.cpu": "12", "pods": "3"},
        ),
    )
    result = run_cli("--config", config_file(tmp_path, kubeconfig), "share", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["errors"] == []
    shares = {s["cluster"]: s for s in answer["share"]}
    assert shares["slurm-test"]["lines"] == []
    assert "no accounting" in shares["slurm-test"]["note"] and "accounting_storage/none" in shares["slurm-test"]["note"]
    site = shares["slurm-site"]
    user = site_slurm("id", "-un").strip() or "root"
    fair = [line for line in site["lines"] if line["scope"].startswith("fair-share in account")]
    assert {line["what"] for line in fair} >= {"fair-share factor", "shares", "effective usage"}
    truth = site_slurm("sshare", "-P", "-U", "-u", user, "-o", "Account,User,FairShare").splitlines()[1].split("|")
    assert next(x["used"] for x in fair if x["what"] == "fair-share factor") == truth[2]
    assert any(line["scope"].startswith("association ") for line in site["lines"])
    assert any(line["scope"].startswith("QoS ") for line in site["lines"])
    quota = {line["what"]: (line["used"], line["limit"]) for line in shares["k8s"]["lines"]}
    assert quota["requests.nvidia.com/gpu (GPUs)"] == ("8", "8")
    assert quota["requests.cpu (CPUs)"] == ("12", "64")
    assert quota["requests.memory (memory)"] == ("0", "256Gi")
    assert quota["pods (pods)"] == ("3", "20")


@pytest.fixture
def site_qos(site_dir):
    """A QoS of the site with a GPU limit (no user is given it), deleted after the test."""
    name = f"where{uuid.uuid4().hex[:6]}"
    site_slurm("sacctmgr", "-i", "add", "qos", name, "GrpTRES=gres/gpu=4", "MaxJobsPU=3")
    yield name
    site_slurm("sacctmgr", "-i", "delete", "qos", name, check=False)


def test_share_shows_a_qos_limit_with_its_use(home, tmp_path, site_qos):
    def listed() -> dict | None:
        result = run_cli("--config", config_file(tmp_path), "share", "--cluster", "slurm-site", "--json", timeout=120)
        assert result.returncode == 0, result.stderr
        lines = json.loads(result.stdout)["share"][0]["lines"]
        mine = {line["what"]: (line["used"], line["limit"]) for line in lines if line["scope"] == f"QoS {site_qos}"}
        return mine or None

    mine = wait_until(listed, timeout=60, what=f"QoS {site_qos} in assoc_mgr")  # slurmdbd tells slurmctld soon
    assert mine["GrpTRES gres/gpu"] == ("0", "4"), mine


async def _record(monkeypatch) -> list[str]:
    sent: list[str] = []
    run = Transport.run

    async def recorded_run(self, argv, *args, **kwargs):
        sent.append(" ".join(argv))
        return await run(self, argv, *args, **kwargs)

    monkeypatch.setattr(Transport, "run", recorded_run)
    return sent


async def test_read_only_where_and_share_send_nothing_mutating(
    monkeypatch, home, site_dir, slurm_dir, emulator, kubeconfig
):
    sent = await _record(monkeypatch)
    name = f"where-ro-{uuid.uuid4().hex[:8]}"
    emulator.add_node("k1", gpus=8)
    emulator.put("resourcequotas", make_quota("compute", "ml", {"requests.nvidia.com/gpu": "8"}))
    backends = [create(replace(c, read_only=True)) for c in (ssh_cluster(), site_cluster())]
    backends.append(create(k8s_cluster(kubeconfig, read_only=True)))
    try:
        assert all(b.read_only for b in backends)
        nodes = await asyncio.gather(*(b.list_nodes() for b in backends))
        spec = spec_from_data({"name": name, "command": "sleep 5", "resources": {"gpus": 1}}, "<test>")
        placed, errors = await place_all(list(zip(backends, nodes)), spec, 60)
        shares = await asyncio.gather(*(b.share() for b in backends))
    finally:
        for backend in backends:
            await backend.close()
    assert errors == [] and len(placed) == 3 and len(shares) == 3
    sbatches = [s for s in sent if "sbatch" in s]
    assert len(sbatches) == 2 and all(s.startswith("sbatch --test-only ") for s in sbatches), sbatches
    mutating = ("scancel", "scontrol update", "scontrol hold", "scontrol release", "sacctmgr", "srun", "salloc")
    assert not [s for s in sent if s.startswith(mutating)], sent
    # at the clusters: no job of that name was made, on either one (nor in the site's accounting)
    assert slurm("squeue", "-h", "-a", "-t", "all", "-n", name, "-o", "%i").strip() == ""
    assert site_slurm("squeue", "-h", "-a", "-t", "all", "-n", name, "-o", "%i").strip() == ""
    assert site_slurm("sacct", "-n", "-X", "-S", "now-1hour", "--name", name, "-o", "JobID").strip() == ""
    assert emulator.mutations() == []
