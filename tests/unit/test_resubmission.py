"""A job this console did not submit, given back to send again (``capabilities.resubmission``): Slurm's
record mapped to sbatch options (``backends/slurm/resubmission.py``) and sent as argv words with the script
on stdin (a hostile name reaches sbatch as one word, through the transport's own script, run by a real
``/bin/sh``); the options the job ran with before the form's changes, the cluster's defaults left out; an
array or a heterogeneous job refused; a Kubernetes Job's new name and body (``backends/kubernetes/
resubmission.py``); and ``resume.plan`` taking it where no spec was kept, by capability."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from yanflow_tui import resume
from yanflow_tui.backends.base import Backend, Capabilities
from yanflow_tui.backends.kubernetes import resubmission as k8s
from yanflow_tui.backends.local import inside
from yanflow_tui.backends.slurm import resubmission as slurm
from yanflow_tui.backends.slurm import verbs
from yanflow_tui.backends.slurm.script import render_native
from yanflow_tui.backends.slurm.transport import script_for
from yanflow_tui.errors import BackendError, SpecError
from yanflow_tui.model import ClusterConfig, JobKind, JobSpec

HOSTILE = "x\"; rm -rf ~ $(id) `id` 'q'\n--partition=evil"
SCRIPT = "#!/bin/sh\n#SBATCH --time=00:03:00\n#SBATCH --partition=cpu\necho hi\n"
# ``squeue --json``'s record of a job sbatch'ed with -J NAME -p gpu --time=4 -c 2 -n 2 --ntasks-per-node=2
# --mem=300M --gres=gpu:a100:1 -o DIR/o-%j.out (22.05: no cpus_per_task, the output as given)
RECORD = {
    "job_id": 2715,
    "name": HOSTILE,
    "partition": "gpu",
    "account": "",
    "qos": "",
    "features": "",
    "current_working_directory": "/jobs/probe",
    "node_count": 1,
    "tasks": 2,
    "tasks_per_node": 2,
    "cpus": 4,
    "cpus_per_task": None,
    "minimum_cpus_per_node": 4,
    "time_limit": 5,
    "tres_per_node": "gres:gpu:a100:1",
    "tres_per_job": "",
    "tres_per_task": "",
    "memory_per_node": 300,
    "memory_per_cpu": None,
    "standard_output": "/jobs/probe/o-%j.out",
    "standard_error": "",
    "array_job_id": 0,
    "array_task_id": None,
    "het_job_id": 0,
    "het_job_id_set": "",
}


def test_the_record_maps_to_the_options_it_ran_with():
    assert slurm.recorded_options(RECORD) == [
        ("job-name", HOSTILE),
        ("partition", "gpu"),
        ("chdir", "/jobs/probe"),
        ("nodes", "1"),
        ("ntasks", "2"),
        ("ntasks-per-node", "2"),
        ("cpus-per-task", "2"),
        ("gres", "gpu:a100:1"),
        ("output", "/jobs/probe/o-%j.out"),
        ("time", "00:05:00"),
        ("mem", "300M"),
    ]


def test_other_settings_map_too_and_slurms_own_defaults_are_left_out():
    record = {
        **RECORD,
        "name": "n",
        "account": "proj",
        "qos": "high",
        "features": "a100&ib",
        "tasks_per_node": 0,
        "cpus_per_task": 3,
        "time_limit": 1500,
        "tres_per_node": "",
        "tres_per_job": "gres:gpu:a100:4",
        "tres_per_task": "gres:gpu:1",
        "memory_per_node": None,
        "memory_per_cpu": 2000,
        "standard_output": "/jobs/probe/slurm-2715.out",  # Slurm's default, expanded: not the job's own
        "standard_error": "/jobs/probe/err.txt",
    }
    options = dict(slurm.recorded_options(record))
    assert options["account"] == "proj" and options["qos"] == "high" and options["constraint"] == "a100&ib"
    assert options["cpus-per-task"] == "3" and options["time"] == "1-01:00:00" and "ntasks-per-node" not in options
    assert options["gpus"] == "a100:4" and options["gpus-per-task"] == "1" and "gres" not in options
    assert options["mem-per-cpu"] == "2000M" and "mem" not in options
    assert "output" not in options and options["error"] == "/jobs/probe/err.txt"
    unlimited = dict(slurm.recorded_options({**record, "time_limit": {"set": True, "infinite": True, "number": 0}}))
    assert "time" not in unlimited


def test_an_array_task_or_a_heterogeneous_job_is_refused_in_a_sentence():
    assert slurm.refusal("2715", RECORD) == ""
    said = slurm.refusal("2716", {**RECORD, "array_job_id": 2700, "array_task_id": 3})
    assert said.startswith("job 2716 is a task of job array 2700") and "YANFLOW_RESUME_FROM" in said
    pending = slurm.refusal("2700", {**RECORD, "array_job_id": 2700, "array_task_string": "0-9"})
    assert "job array 2700" in pending
    het = slurm.refusal("2717", {**RECORD, "het_job_id": 2717, "het_job_id_set": "2717-2718"})
    assert "heterogeneous job" in het
    assert "heterogeneous" in slurm.accounting_refusal("9", {"het": {"job_id": 9}})
    assert "job array 8" in slurm.accounting_refusal("9", {"array": {"job_id": 8}})


def test_accounting_options_leave_the_comment_out():
    raw = {
        "name": "n",
        "partition": "gpu",
        "comment": {"job": "mine"},
        "tres": {"requested": [{"type": "node", "count": 2}, {"type": "mem", "count": 1024}]},
        "time": {"limit": 90},
        "required": {"memory": 512},
    }
    options = dict(slurm.accounting_options(raw))
    assert "comment" not in options and options["job-name"] == "n" and options["nodes"] == "2"
    assert options["time"] == "01:30:00" and options["mem"] == "512M"


def given_back(env: dict[str, str] | None = None) -> JobSpec:
    return slurm.spec_for("2715", SCRIPT, slurm.recorded_options(RECORD), env or {resume.RESUME_ENV: "/c/e2.json"})


def test_recorded_options_go_before_the_forms_changes_and_the_defaults_stay_out():
    spec = given_back()
    assert spec.native is not None and spec.native.text == SCRIPT and spec.native.editable
    assert spec.section("slurm")["partition"] == "cpu"  # the fields are the script's own lines
    rendered = render_native(spec, "0" * 32, {"partition": "batch", "account": "acct"})
    argv = list(rendered.argv)
    assert rendered.script == SCRIPT  # the script as Slurm kept it, on stdin
    assert argv[:3] == ["sbatch", "--parsable", argv[2]] and argv[2].startswith("--comment=yanflow:" + "0" * 32)
    assert argv[3:] == [
        f"--job-name={HOSTILE}",
        "--partition=gpu",
        "--chdir=/jobs/probe",
        "--nodes=1",
        "--ntasks=2",
        "--ntasks-per-node=2",
        "--cpus-per-task=2",
        "--gres=gpu:a100:1",
        "--output=/jobs/probe/o-%j.out",
        "--time=00:05:00",
        "--mem=300M",
        f"--export=ALL,{resume.RESUME_ENV}=/c/e2.json",
    ]
    edited = replace(spec, sections={"slurm": {**spec.section("slurm"), "partition": "big"}})
    argv = list(render_native(edited, "0" * 32).argv)
    assert argv.index("--partition=big") > argv.index("--partition=gpu")  # sbatch takes the last one


def test_a_comma_in_the_checkpoint_path_is_refused_not_split():
    with pytest.raises(SpecError, match="cannot pass a comma"):
        render_native(given_back({resume.RESUME_ENV: "/c/a,b"}), "0" * 32)


def test_a_hostile_name_reaches_sbatch_as_one_word_through_the_transports_script(tmp_path):
    fake = tmp_path / "sbatch"
    fake.write_text('#!/bin/sh\nfor a do printf "%s\\0" "$a"; done > "$OUT"\ncat > "$OUT.stdin"\n')
    fake.chmod(0o755)
    rendered = render_native(given_back(), "0" * 32)
    out = tmp_path / "argv"
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}", OUT=str(out))
    subprocess.run(["/bin/sh", "-c", script_for(rendered.argv, rendered.script)], env=env, check=True, timeout=30)
    words = out.read_bytes().decode().split("\0")[:-1]
    assert words == list(rendered.argv[1:]) and f"--job-name={HOSTILE}" in words and "--partition=evil" not in words
    assert Path(f"{out}.stdin").read_text() == SCRIPT
    assert not (Path.home() / "q").exists()


def test_k8s_names_stay_within_63_characters_and_count_up():
    assert k8s.resumed_name("train", 1) == "train-resume-1"
    assert k8s.resumed_name("train-resume-1", 2) == "train-resume-2"
    long = k8s.resumed_name("a" * 50 + "-" + "b" * 20, 12)
    assert len(long) == 63 and long.endswith("-resume-12") and not long.startswith("-")
    assert k8s.resumed_name("a" * 53 + "-x", 3) == "a" * 53 + "-resume-3"  # cut short, never "...--resume"


def test_k8s_new_job_keeps_the_template_and_leaves_out_what_the_server_added():
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "t",
            "namespace": "ml",
            "uid": "u",
            "resourceVersion": "9",
            "managedFields": [{}],
            "labels": {"team": "v", "batch.kubernetes.io/job-name": "t", "controller-uid": "u"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "n"},
        },
        "spec": {
            "selector": {"matchLabels": {"controller-uid": "u"}},
            "manualSelector": False,
            "parallelism": 2,
            "template": {
                "metadata": {"labels": {"app": "t", "job-name": "t", "batch.kubernetes.io/controller-uid": "u"}},
                "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "X", "valueFrom": {}}]}]},
            },
        },
        "status": {"failed": 1},
    }
    new = k8s.new_job(job, "t-resume-1", {"X": "1", "Y": "2"})
    assert new == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "t-resume-1", "namespace": "ml", "labels": {"team": "v"}, "annotations": {"note": "n"}},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"labels": {"app": "t"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}
                    ]
                },
            },
        },
    }
    assert job["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "X", "valueFrom": {}}]  # a copy


class GivingBack(Backend):
    """A cluster whose job's output folder is ``root`` and that gives a job back to send again."""

    kind = "giving"
    capabilities = Capabilities(files=True, submit=True, job_kinds=frozenset(JobKind), resubmission=True)

    def __init__(self, name: str, root: Path, refuse: str = ""):
        super().__init__(ClusterConfig(name, "giving"))
        self.root, self.refuse, self.asked = root, refuse, []

    async def list_jobs(self):
        return []

    async def list_nodes(self):
        return []

    async def list_files(self, job_id, path=""):
        return inside.list_dir(str(self.root), path)

    async def download(self, job_id, path, target, progress=None):
        return inside.download(str(self.root), path, target, progress)

    async def native_resubmission(self, job_id, env):
        self.asked.append((job_id, dict(env)))
        if self.refuse:
            raise BackendError(self.refuse)
        return given_back(dict(env))

    async def _submit(self, spec):
        return "1"


async def test_plan_takes_the_job_as_its_cluster_gives_it_back_where_no_spec_was_kept(home, tmp_path):
    (tmp_path / "checkpoints").mkdir()
    for n in (1, 2):
        (tmp_path / "checkpoints" / f"epoch_{n}.json").write_text("{}")
    path = str(tmp_path / "checkpoints" / "epoch_2.json")
    backend = GivingBack("a", tmp_path)
    plan = await resume.plan(backend, "7")
    assert backend.asked == [("7", {resume.RESUME_ENV: path})] and plan.why_no_spec == ""
    assert plan.spec is not None and plan.spec.native is not None and plan.spec.cluster == "a"
    assert plan.spec.env == {resume.RESUME_ENV: path} and plan.spec.native.recorded[0] == ("job-name", HOSTILE)

    other = GivingBack("b", tmp_path)
    plan = await resume.plan(backend, "7", other)
    assert plan.spec is None and "on a only" in plan.why_no_spec and f"{resume.RESUME_ENV}={path}" in plan.why_no_spec

    refusing = GivingBack("c", tmp_path, refuse="job 7 is a task of job array 6: ...")
    plan = await resume.plan(refusing, "7")
    assert plan.spec is None and plan.why_no_spec.endswith("cannot send it again: job 7 is a task of job array 6: ...")

    class Unable(GivingBack):
        capabilities = replace(GivingBack.capabilities, resubmission=False)

    plan = await resume.plan(Unable("d", tmp_path), "7")
    assert plan.spec is None and "not submitted from this console" in plan.why_no_spec


def test_resubmit_reads_the_record_as_resume_does():
    """``resubmit`` (``verbs``) reads slurmctld's record through the same mapping: the constraint, the
    tasks per node, GPUs per task and 22.05's CPUs per task reach sbatch again (resubmit dropped the
    first three before), with the comment retagged, not dropped."""
    record = {**RECORD, "name": "n", "features": "a100&ib", "tres_per_task": "gres:gpu:1", "comment": "mine"}
    argv = verbs.options_from_squeue(record).argv("t" * 12)
    assert argv[:2] == ["sbatch", "--parsable"] and argv[-1].startswith("--comment=") and "mine" in argv[-1]
    said = "--job-name=n --partition=gpu --constraint=a100&ib --chdir=/jobs/probe --nodes=1 --ntasks=2"
    said += " --ntasks-per-node=2 --cpus-per-task=2 --gres=gpu:a100:1 --gpus-per-task=1"
    assert argv[2:-1] == [*said.split(), "--output=/jobs/probe/o-%j.out", "--time=5", "--mem=300M"]
    assert dict(slurm.recorded_options(record)).keys() == {a[2:].split("=")[0] for a in argv[2:-1]}
