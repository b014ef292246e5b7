"""Slurm jobs in containers. podman for real on the loopback cluster (its slurmd run as root here):
a read-only mount, reclamation, a cancel, and every launcher on 2 nodes with stub launchers inside the
image. Pyxis and Apptainer, which this machine cannot run, through the rendered script checked against
each tool's documented flags (quoted in backends/slurm/containers.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from slurmhelpers import JOBS, Jobs, live_state, slurm, ssh_cluster
from waiting import async_wait_until, wait_until

from yanflow_tui import launchers
from yanflow_tui.backends.slurm import parse
from yanflow_tui.backends.slurm.backend import SlurmBackend
from yanflow_tui.backends.slurm.containers import Container, configured
from yanflow_tui.backends.slurm.script import render, render_native
from yanflow_tui.errors import BackendError
from yanflow_tui.model import NativeFile
from yanflow_tui.spec import spec_from_data

WORDS = ["train.py", "--name", "a b", "$HOME"]
STUB = """#!/bin/sh
out=/record/$SLURM_NODEID-${0##*/}
printf '%s\\n' "${0##*/}" "$@" > "$out.argv"
env > "$out.env"
"""
STUBS = ("torchrun", "deepspeed", "accelerate", "horovodrun", "python3")
RANK_OPTION = {"torchrun": "--node_rank", "deepspeed": "--node_rank", "accelerate": "--machine_rank"}


@pytest.fixture
def work(slurm_dir):
    root = JOBS / f"containers-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def backend(slurm_dir, podman):
    b = SlurmBackend(ssh_cluster(container={"runtime": "podman", "conf": str(podman.conf)}))
    yield b
    await b.close()


def left_behind(podman, job_id: str) -> list[str]:
    return podman.containers(f"yanflow-{job_id}-")


async def wait_ended(backend: SlurmBackend, job_id: str) -> str:
    async def ended():
        state = live_state(job_id)
        return state or "GONE" if state in (None, "COMPLETED", "FAILED", "CANCELLED") else None

    return await async_wait_until(ended, timeout=120, what=f"job {job_id} to end")


async def test_podman_job_reads_a_read_only_mount_cannot_write_it_and_is_reclaimed(backend, podman, work):
    data = work / "data"
    data.mkdir()
    (data / "hello.txt").write_text("from the cluster's filesystem\n")
    out = work / "out.log"
    spec = spec_from_data(
        {
            "name": "yf-podman-ro",
            "kind": "slurm",
            "image": podman.image,
            "workdir": "/data",
            "mounts": [f"{data}:/data:ro"],
            "env": {"GREETING": "hi there"},
            "command": 'cat hello.txt; echo "pwd=$(pwd) greeting=$GREETING"; touch /data/new || echo WRITE-FAILED',
            "resources": {"cpus": 1, "memory": "100M"},
            "slurm": {"partition": "cpu", "time": "00:02:00", "output": str(out)},
        }
    )
    assert "podman run --rm" in backend.render(spec)  # the preview shows the runtime
    jobs = Jobs()
    try:
        job_id = jobs.add(await backend.submit(spec))
        await wait_ended(backend, job_id)
        text = out.read_text()
        assert "from the cluster's filesystem" in text, text
        assert "pwd=/data greeting=hi there" in text, text
        assert "Read-only file system" in text and "WRITE-FAILED" in text, text
        assert not (data / "new").exists()
        assert left_behind(podman, job_id) == []
        fresh = SlurmBackend(ssh_cluster())  # a console started afresh reads the image from the job's comment
        try:
            described = await fresh.describe(job_id)
            job = parse.to_job(await fresh._raw_job(job_id), "c")
        finally:
            await fresh.close()
        assert job.image == podman.image
        assert re.search(rf"^Image:\s+{re.escape(podman.image)}$", described, re.M), described
    finally:
        jobs.cancel_all()


async def test_scancel_stops_the_podman_container(backend, podman, work):
    spec = spec_from_data(
        {
            "name": "yf-podman-cancel",
            "kind": "slurm",
            "image": podman.image,
            "command": "echo up; sleep 600",
            "resources": {"cpus": 1, "memory": "100M"},
            "slurm": {"partition": "cpu", "time": "00:05:00", "output": str(work / "out.log")},
        }
    )
    jobs = Jobs()
    try:
        job_id = jobs.add(await backend.submit(spec))
        await async_wait_until(lambda: left_behind(podman, job_id), timeout=120, what="the container to run")
        await backend.cancel(job_id)
        await async_wait_until(lambda: not left_behind(podman, job_id), timeout=30, what="the container to go")
    finally:
        jobs.cancel_all()


@pytest.fixture(scope="module")
def podman_matrix(slurm_dir, podman):
    """Every launcher as a 2-node job in the busybox image, submitted at once: launcher -> (job id, records)."""
    root = JOBS / f"podman-launchers-{uuid.uuid4().hex[:8]}"
    jobs = Jobs()
    submitted = {}
    container = Container("podman", str(podman.conf))
    try:
        for launcher in launchers.LAUNCHERS:
            stubs, record = root / launcher / "stubs", root / launcher / "record"
            stubs.mkdir(parents=True)
            record.mkdir()
            for name in STUBS:
                (stubs / name).write_text(STUB)
                (stubs / name).chmod(0o755)
            spec = spec_from_data(
                {
                    "name": f"yf-podman-{launcher}",
                    "kind": "multi-node",
                    "launcher": launcher,
                    "image": podman.image,
                    "mounts": [f"{stubs}:/stubs:ro", f"{record}:/record"],
                    "command": ["python3", *WORDS],
                    "env": {"PATH": f"/stubs:/bin:{os.environ['PATH']}"},
                    "resources": {"nodes": 2, "cpus": 1, "memory": "100M"},
                    "slurm": {"partition": "cpu", "time": "00:03:00", "output": str(root / launcher / "%j.out")},
                }
            )
            r = render(spec, f"test-{uuid.uuid4().hex[:6]}", container=container)
            submitted[launcher] = (jobs.add(slurm(*r.argv, input=r.script).strip().split(";")[0]), record)
        yield submitted
    finally:
        jobs.cancel_all()
        shutil.rmtree(root, ignore_errors=True)


def _records(record: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    out = {}
    for argv in sorted(record.glob("*.argv")):
        env = dict(line.split("=", 1) for line in argv.with_suffix(".env").read_text().splitlines() if "=" in line)
        out[argv.stem] = (argv.read_text().splitlines(), env)
    return out


@pytest.mark.parametrize("launcher", launchers.LAUNCHERS)
def test_each_launcher_runs_in_the_podman_image_on_each_node(podman_matrix, podman, launcher):
    job_id, record = podman_matrix[launcher]

    def done():
        state = live_state(job_id)
        assert state not in ("FAILED", "CANCELLED", "TIMEOUT"), (state, _output(record))
        return state in ("COMPLETED", None)

    wait_until(done, timeout=240, what=f"job {job_id} ({launcher})")
    recs = _records(record)
    assert left_behind(podman, job_id) == []
    if launcher == "horovod":  # one driver, in the image, on the first node
        ((argv, env),) = recs.values()
        assert argv[:4] == ["horovodrun", "-np", "2", "-H"] and argv[5:] == ["python3", *WORDS]
        assert len(argv[4].split(",")) == 2 and env["SLURM_NODEID"] == "0" and env.get("container") == "podman"
        return
    assert len(recs) == 2, (recs.keys(), _output(record))
    ranks = set()
    for argv, env in recs.values():
        assert env.get("container") == "podman"  # podman sets it in its containers
        assert env["SLURM_JOB_ID"] == job_id and env["NNODES"] == "2" and env["MASTER_PORT"]
        if launcher == "none":
            assert argv == ["python3", *WORDS]
            rank = env["NODE_RANK"]
        elif launcher == "tensorflow":  # no launcher process: TF_CONFIG, built on the node, names its index
            assert argv == ["python3", *WORDS]
            rank = str(json.loads(env["TF_CONFIG"])["task"]["index"])
        else:
            assert argv[-len(WORDS) :] == WORDS
            rank = next(w.split("=", 1)[1] for w in argv if w.startswith(RANK_OPTION[launcher] + "="))
        assert rank == env["SLURM_NODEID"]  # expanded on the node, inside the step
        ranks.add(rank)
    assert ranks == {"0", "1"}


def _output(record: Path) -> str:
    return "\n".join(p.read_text() for p in record.parent.glob("*.out"))


# -- Pyxis and Apptainer: the rendered script against their documented flags ------------------------


def _spec(launcher: str = "torchrun", kind: str = "multi-node", gpus: int = 2, **extra):
    return spec_from_data(
        {
            "name": "c",
            "kind": kind,
            **({"launcher": launcher} if kind == "multi-node" else {}),
            "image": "nvcr.io#nvidia/pytorch:24.01-py3",
            "workdir": "/workspace",
            "mounts": ["/datasets:/data:ro", "/scratch/out:/out"],
            "command": ["python", "train.py", "--lr", "0.1"],
            "resources": {"nodes": 2 if kind == "multi-node" else 1, "gpus": gpus},
            **extra,
        }
    )


def _last(script: str) -> list[str]:
    """The script's last command, as words (the step's script stays one word)."""
    body = script.split("export WORLD_SIZE", 1)[-1].split("export HOSTS", 1)[-1]
    start = min(i for i in (body.find("\nsrun "), body.find("\napptainer "), body.find("\nsingularity ")) if i >= 0)
    return shlex.split(body[start:])


@pytest.mark.parametrize("launcher", launchers.LAUNCHERS)
def test_pyxis_options_go_on_srun_and_the_step_runs_inside(launcher):
    words = _last(render(_spec(launcher), "t", container=Container("pyxis")).script)
    # pyxis: --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH
    #        --container-mounts=SRC:DST[:FLAGS][,SRC:DST...]   (FLAGS: e.g. ro)
    #        --container-workdir=PATH                          working directory inside the container
    assert "--container-image=nvcr.io#nvidia/pytorch:24.01-py3" in words
    assert "--container-mounts=/datasets:/data:ro,/scratch/out:/out" in words
    assert "--container-workdir=/workspace" in words
    assert words[0] == "srun" and words.index("--container-image=nvcr.io#nvidia/pytorch:24.01-py3") < words.index("-c")
    assert words[-3:-1] == ["/bin/sh", "-c"]
    step = words[-1]
    if launcher == "horovod":
        assert "--nodes=1" in words and "--ntasks=1" in words  # the one driver, in the image
        assert step.startswith('exec horovodrun -np "$WORLD_SIZE" -H "$HOSTS"')
    else:
        assert "--ntasks-per-node=1" in words
        assert step.startswith("NODE_RANK=$SLURM_NODEID; export NODE_RANK\n")  # on the node, not the batch shell
        prefix = launchers.prefix(launcher)
        assert prefix is None or prefix in step
    assert "train.py --lr 0.1" in step


@pytest.mark.parametrize("runtime", ["apptainer", "singularity"])
@pytest.mark.parametrize("launcher", launchers.LAUNCHERS)
def test_apptainer_exec_runs_each_task_in_the_image(runtime, launcher):
    words = _last(render(_spec(launcher), "t", container=Container(runtime)).script)
    start = words.index(runtime)
    # apptainer exec [exec options...] <container> <command>
    #   --nv                          enable Nvidia support
    #   -B, --bind src[:dest[:opts]]  opts 'ro' or 'rw'; several as a comma separated list
    #   --pwd string                  initial working directory for payload process inside the container
    assert words[start : start + 8] == [
        runtime,
        "exec",
        "--nv",
        "--bind",
        "/datasets:/data:ro,/scratch/out:/out",
        "--pwd",
        "/workspace",
        "nvcr.io#nvidia/pytorch:24.01-py3",
    ]
    assert words[start + 8 : start + 10] == ["/bin/sh", "-c"]
    if launcher == "horovod":
        assert start == 0  # the driver, on the batch shell's node
    else:
        assert words[:start] == [
            "srun",
            "--ntasks-per-node=1",
            "--kill-on-bad-exit=1",
            "${YF_RANK_OUTPUT:+$YF_RANK_OUTPUT}",
        ]
        assert words[-1].startswith("NODE_RANK=$SLURM_NODEID; export NODE_RANK\n")


def test_apptainer_without_gpus_has_no_nv_and_a_single_job_runs_in_the_batch_shell():
    script = render(_spec(kind="slurm", gpus=0), "t", container=Container("apptainer")).script
    last = shlex.split(script[script.index("\napptainer ") :])
    assert last[:2] == ["apptainer", "exec"] and "--nv" not in last
    assert last[-3:] == ["/bin/sh", "-c", "exec python train.py --lr 0.1\n"]
    assert "--chdir" not in script  # the workdir is the image's, set with --pwd


def test_pyxis_single_job_is_one_srun_step():
    script = render(_spec(kind="slurm"), "t", container=Container("pyxis", args=("--no-container-mount-home",)))
    last = shlex.split(script.script[script.script.index("\nsrun ") :])
    assert last[:3] == ["srun", "--nodes=1", "--ntasks=1"]
    assert "--no-container-mount-home" in last  # the site's own pyxis options from container.args
    assert "#SBATCH --chdir" not in script.script


def test_podman_passes_the_nodes_gpus_and_variables_by_name():
    script = render(_spec("torchrun", env={"SECRET": "s p a c e"}), "t", container=Container("podman", "/etc/c.conf"))
    words = _last(script.script)
    wrapper = words[-1]
    assert 'nvidia.com/gpu=$gpu"' in wrapper and "${SLURM_STEP_GPUS:-$SLURM_JOB_GPUS}" in wrapper
    assert "--env SECRET " in wrapper and "s p a c e" not in wrapper  # the value stays in the batch shell's export
    assert "CONTAINERS_CONF=/etc/c.conf podman run --rm" in wrapper
    assert "trap " in wrapper and "podman stop --time 5" in wrapper and "podman rm --force" in wrapper


def test_an_image_needs_a_runtime_and_mounts_need_an_image():
    with pytest.raises(BackendError, match="runs no containers"):
        render(_spec(), "t")
    with pytest.raises(BackendError, match="add image:"):
        render(spec_from_data({"name": "m", "command": "true", "mounts": ["/a:/a"]}), "t", container=Container("pyxis"))
    with pytest.raises(BackendError, match="container.runtime must be one of"):
        configured({"container": {"runtime": "lxc"}}, "c")
    with pytest.raises(BackendError, match="cannot be passed"):
        render(_spec(mounts=["/a,b:/a"]), "t", container=Container("apptainer"))


def test_an_sbatch_script_as_written_with_an_image_is_refused():
    native = NativeFile(
        "sbatch", "run.sbatch", "#!/bin/sh\necho hi\n", written=spec_from_data({"name": "n", "command": "x"})
    )
    s = replace(_spec(kind="slurm"), native=native)
    with pytest.raises(BackendError, match="runs no container"):
        render_native(s, "t")
