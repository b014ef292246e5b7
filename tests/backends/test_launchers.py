"""Multi-node launchers rank every node: 2- and 3-node jobs per launcher on the real Slurm test cluster
and, run locally once per completion index, the Kubernetes pod command; stub launchers (torchrun,
deepspeed, accelerate, horovodrun, python3) first on the job's PATH record the argv and environment
each node gets. Also: a leading python per launcher, the Determined entrypoints, the one launcher list.

The Slurm jobs of the whole matrix are submitted at once by one module fixture, so they run side by
side on the cluster (each test then waits only for its own job); all are cancelled at teardown."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from k8shelpers import pod_env
from slurmhelpers import JOBS, Jobs, live_state, slurm
from waiting import wait_until

from yanflow_tui import formfields as ff
from yanflow_tui import launchers
from yanflow_tui.backends import registry
from yanflow_tui.backends.determined import submit as det_submit
from yanflow_tui.backends.kubernetes import manifests as k8s_manifests
from yanflow_tui.backends.slurm import script as slurm_script
from yanflow_tui.backends.slurm.script import render
from yanflow_tui.config import ClusterConfig
from yanflow_tui.errors import BackendError, SpecError
from yanflow_tui.model import JobKind
from yanflow_tui.spec import spec_from_data

NPROC = 2
WORDS = ["train.py", "--name", "a b", "$HOME"]  # the user's script and args, to arrive byte-exact
ARGV = ["python3", *WORDS]
LINE = """python -u train.py --name "a b" '$HOME'"""  # the same as a shell line
STUBS = ("torchrun", "deepspeed", "accelerate", "horovodrun", "python", "python3")
PER_NODE = ("torchrun", "deepspeed", "accelerate", "none")
STUB = """#!{python}
import json, os, sys, uuid
record = os.environ["YF_RECORD"]
with open(os.path.join(record, uuid.uuid4().hex + ".json"), "w") as f:
    json.dump({{"argv": [os.path.basename(sys.argv[0])] + sys.argv[1:], "env": dict(os.environ)}}, f)
"""


def make_stubs(root: Path) -> tuple[Path, Path]:
    """A bin dir of recording stubs, and the empty dir they record into."""
    bin_dir, record = root / "bin", root / "record"
    bin_dir.mkdir(parents=True)
    record.mkdir()
    for name in STUBS:
        exe = bin_dir / name
        exe.write_text(STUB.format(python=sys.executable))
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir, record


def spec(launcher: str, nodes: int, command, bin_dir: Path, record: Path, **extra):
    return spec_from_data(
        {
            "name": f"yf-launch-{launcher}-{nodes}",
            "kind": "multi-node",
            "launcher": launcher,
            "command": command,
            "resources": {"nodes": nodes, "gpus": NPROC, "cpus": 1, "memory": "1G"},
            "env": {
                "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                "YF_RECORD": str(record),
                "TMPDIR": str(record.parent),  # where deepspeed's hostfile is written
            },
            **extra,
        }
    )


def records(record: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(record.glob("*.json"))]


def options(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """``--key=value`` / ``--flag`` options up to the first other word, and the words from there."""
    opts: dict[str, str] = {}
    for i, word in enumerate(argv):
        if not word.startswith("--"):
            return opts, argv[i:]
        key, _, value = word[2:].partition("=")
        opts[key] = value
    return opts, []


def check_ranked(launcher: str, recs: list[dict], nodes: int, rank_var: str, words: list[str]) -> dict:
    """Each node: its own rank, agreed nnodes/processes/master; the user's words intact.
    Returns what all nodes agree on."""
    assert len(recs) == nodes, [r["argv"] for r in recs]
    seen = []
    for rec in recs:
        argv, env = rec["argv"], rec["env"]
        if launcher == "none":
            assert argv == ["python3", *words]
            got = {
                "nnodes": env["NNODES"],
                "rank": env["NODE_RANK"],
                "nproc": env["NPROC_PER_NODE"],
                "addr": env["MASTER_ADDR"],
                "port": env["MASTER_PORT"],
            }
        else:
            if launcher == "accelerate":
                assert argv[1] == "launch"
                argv = argv[1:]
            assert argv[0] in (launcher, "launch")
            opts, rest = options(argv[1:])
            assert rest == words, rest
            if launcher == "torchrun":
                got = {
                    "nnodes": opts["nnodes"],
                    "rank": opts["node_rank"],
                    "nproc": opts["nproc_per_node"],
                    "addr": opts["master_addr"],
                    "port": opts["master_port"],
                }
            elif launcher == "deepspeed":
                assert "no_ssh" in opts
                # --no_ssh reads the node list from a hostfile: without one, deepspeed refuses num_nodes > 1
                hosts = Path(opts["hostfile"]).read_text().splitlines()
                assert hosts == [f"node{i} slots={NPROC}" for i in range(nodes)], hosts
                got = {
                    "nnodes": opts["num_nodes"],
                    "rank": opts["node_rank"],
                    "nproc": opts["num_gpus"],
                    "addr": opts["master_addr"],
                    "port": opts["master_port"],
                }
            else:
                assert "multi_gpu" in opts and opts["num_processes"] == str(nodes * NPROC)
                got = {
                    "nnodes": opts["num_machines"],
                    "rank": opts["machine_rank"],
                    "nproc": str(NPROC),
                    "addr": opts["main_process_ip"],
                    "port": opts["main_process_port"],
                }
        assert got["rank"] == env[rank_var], (got, rank_var)  # the rank is this node's own
        seen.append(got)
    assert sorted(int(s["rank"]) for s in seen) == list(range(nodes))
    agreed = {key: {s[key] for s in seen} for key in ("nnodes", "nproc", "addr", "port")}
    assert all(len(values) == 1 for values in agreed.values()), agreed
    assert agreed["nnodes"] == {str(nodes)} and agreed["nproc"] == {str(NPROC)}
    return {key: values.pop() for key, values in agreed.items()}


def check_horovod(recs: list[dict], nodes: int, words: list[str]) -> list[str]:
    """One horovodrun for the job, told every host once with a slot per process; python kept."""
    assert len(recs) == 1, [r["argv"] for r in recs]
    argv = recs[0]["argv"]
    assert argv[0] == "horovodrun" and argv[1] == "-np" and argv[2] == str(nodes * NPROC) and argv[3] == "-H"
    hosts = argv[4].split(",")
    assert len(hosts) == nodes and len({h.split(":")[0] for h in hosts}) == nodes
    assert all(h.endswith(f":{NPROC}") for h in hosts)
    assert argv[5:] == ["python3", *words]
    return [h.split(":")[0] for h in hosts]


# -- on the real Slurm cluster ---------------------------------------------------------------------

SLURM_CASES = [(launcher, nodes, "argv") for launcher in (*PER_NODE, "horovod") for nodes in (2, 3)]
SLURM_CASES.append(("torchrun", 2, "line"))


@pytest.fixture(scope="module")
def slurm_matrix(slurm_dir):
    """Every case's job, submitted at once through our sbatch rendering: case -> (job id, record dir)."""
    root = JOBS / f"launchers-{uuid.uuid4().hex[:8]}"
    jobs = Jobs()
    submitted = {}
    try:
        for case in SLURM_CASES:
            launcher, nodes, form = case
            bin_dir, record = make_stubs(root / f"{launcher}-{nodes}-{form}")
            s = spec(
                launcher,
                nodes,
                ARGV if form == "argv" else LINE,
                bin_dir,
                record,
                slurm={"partition": "gpu", "time": "00:02:00", "output": str(record.parent / "%j.out")},
            )
            r = render(s, f"test-{uuid.uuid4().hex[:6]}")
            job_id = slurm(*r.argv, input=r.script).strip().split(";")[0]
            submitted[case] = (jobs.add(job_id), record)
        yield submitted
    finally:
        jobs.cancel_all()
        shutil.rmtree(root, ignore_errors=True)


def finished(job_id: str, record: Path) -> bool:
    state = live_state(job_id)
    assert state not in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"), (state, _output(record))
    return state in ("COMPLETED", None)  # every stub has written its record by then


def _output(record: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(record.parent.glob("*.out*")))  # with each rank's file


def node_addr(node: str) -> str:
    line = slurm("scontrol", "-o", "show", "node", node)
    return next(w.split("=", 1)[1] for w in line.split() if w.startswith("NodeAddr="))


@pytest.mark.parametrize("case", SLURM_CASES, ids=lambda c: "-".join(map(str, c)))
def test_each_node_of_a_slurm_job_gets_its_own_rank(slurm_matrix, case):
    launcher, nodes, form = case
    job_id, record = slurm_matrix[case]
    wait_until(lambda: finished(job_id, record), timeout=240, what=f"job {job_id} ({case})")
    recs = records(record)
    hosts = slurm("scontrol", "show", "hostnames", recs[0]["env"]["SLURM_JOB_NODELIST"]).split()
    assert len(hosts) == nodes
    if launcher == "horovod":
        assert check_horovod(recs, nodes, WORDS) == hosts
        assert recs[0]["env"]["SLURM_NODEID"] == "0"  # the driver runs on the first node
        return
    agreed = check_ranked(launcher, recs, nodes, "SLURM_NODEID", WORDS)
    assert {r["env"]["SLURMD_NODENAME"] for r in recs} == set(hosts)  # one launcher on each node
    assert agreed["addr"] == node_addr(hosts[0])  # the allocation's first node
    assert 20000 <= int(agreed["port"]) < 40000


# -- Kubernetes: the pod command, run once per completion index -------------------------------------


@pytest.mark.parametrize("nodes", [2, 3])
@pytest.mark.parametrize("launcher", PER_NODE)
@pytest.mark.parametrize("form", ["argv", "line"])
def test_each_pod_of_an_indexed_job_gets_its_own_rank(tmp_path, launcher, nodes, form):
    bin_dir, record = make_stubs(tmp_path)
    command = ARGV if form == "argv" or launcher == "none" else LINE
    job, service = k8s_manifests.manifests(spec(launcher, nodes, command, bin_dir, record), "0123456789ab", "ml")
    name = job["metadata"]["name"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"]
    for index in range(nodes):
        env = {**pod_env(container, index), "JOB_COMPLETION_INDEX": str(index), "HOSTNAME": f"{name}-{index}"}
        subprocess.run(container["command"], env=env, check=True, timeout=30, cwd=tmp_path)
    agreed = check_ranked(launcher, records(record), nodes, "JOB_COMPLETION_INDEX", WORDS)
    assert agreed["addr"] == f"{name}-0.{service['metadata']['name']}.ml.svc"  # pod 0 by the headless service


def test_kubernetes_refuses_horovod_naming_the_mpi_operator(tmp_path):
    bin_dir, record = make_stubs(tmp_path)
    with pytest.raises(BackendError, match="MPI Operator"):
        k8s_manifests.manifests(spec("horovod", 2, ARGV, bin_dir, record), "0123456789ab", "ml")
    assert "horovod" not in k8s_manifests.LAUNCHERS


# -- a leading python, per launcher ----------------------------------------------------------------


@pytest.mark.parametrize(
    "command, launcher, handed",
    [
        (["python", "train.py", "a b"], "torchrun", ["train.py", "a b"]),
        (["/usr/bin/python3", "-u", "train.py"], "deepspeed", ["train.py"]),
        (["python3.11", "-m", "pkg.train", "--x"], "torchrun", ["-m", "pkg.train", "--x"]),
        (["python3", "-u", "-m", "pkg.train"], "deepspeed", ["--module", "pkg.train"]),
        (["python", "-m", "pkg.train"], "accelerate", ["-m", "pkg.train"]),
        (["python3", "train.py"], "horovod", ["python3", "train.py"]),  # horovodrun runs a command
        (["python3", "-O", "train.py"], "none", ["python3", "-O", "train.py"]),
        (["train.py", "python"], "torchrun", ["train.py", "python"]),
    ],
)
def test_a_leading_python_is_dropped_where_the_launcher_runs_python(command, launcher, handed):
    assert launchers.handed_words(launcher, command) == handed


@pytest.mark.parametrize(
    "line, handed",
    [
        ("python train.py --x $HOME", "train.py --x $HOME"),
        ("  /opt/venv/bin/python3 -u -m pkg.train --lr 1e-3", "-m pkg.train --lr 1e-3"),
        ("""python "my script.py" 'a b'""", """"my script.py" 'a b'"""),
        ("python train.py > log 2>&1", "train.py > log 2>&1"),
        ("train.py --when $(date +%s)", "train.py --when $(date +%s)"),
    ],
)
def test_a_shell_line_keeps_its_shell_text_after_the_python_word(line, handed):
    assert launchers.handed_line("torchrun", line) == handed


@pytest.mark.parametrize(
    "command, message",
    [
        (["python3", "-O", "train.py"], "Python option -O cannot reach it"),
        (["python"], "python with no script"),
        ("python -c 'import x'", "Python option -c"),
        ("cd src && python train.py", "this line has '&&'"),
        ("python a.py; python b.py", "has ';'"),
        ("source env.sh\npython train.py", "not several lines"),
        ("WANDB_MODE=offline python train.py", "set it in env:"),
        ("python 'train.py", "cannot be read as a shell line"),
    ],
)
def test_commands_a_launcher_cannot_take_are_refused_clearly(tmp_path, command, message):
    bin_dir, record = make_stubs(tmp_path)
    s = spec("torchrun", 2, command, bin_dir, record)
    with pytest.raises(BackendError, match=message):
        render(s, "t")
    with pytest.raises(BackendError, match=message):
        k8s_manifests.check(s)


def test_launcher_variables_cannot_be_set_through_env_on_slurm(tmp_path):
    bin_dir, record = make_stubs(tmp_path)
    s = spec("horovod", 2, ARGV, bin_dir, record)
    with pytest.raises(BackendError, match="HOSTS, NODE_RANK"):
        render(spec_from_data({**_data(s), "env": {"NODE_RANK": "1", "HOSTS": "x"}}), "t")
    render(spec_from_data({**_data(s), "launcher": "torchrun", "env": {"HOSTS": "x"}}), "t")  # only horovodrun's


def _data(s) -> dict:
    return {
        "name": s.name,
        "kind": s.kind.value,
        "launcher": s.launcher,
        "command": list(s.command),
        "resources": {"nodes": s.resources.nodes, "gpus": s.resources.gpus},
    }


def test_a_multi_node_job_without_a_launcher_runs_its_shell_line_on_every_node():
    s = spec_from_data(
        {"name": "x", "kind": "multi-node", "command": "echo $NODE_RANK; hostname", "resources": {"nodes": 2}}
    )
    step = shlex.split("srun " + render(s, "t").script.split("\nsrun ", 1)[1])
    assert step[:3] == ["srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    assert step[3:6] == ["${YF_RANK_OUTPUT:+$YF_RANK_OUTPUT}", "/bin/sh", "-c"]  # each rank's own file
    assert step[-1] == "NODE_RANK=$SLURM_NODEID; export NODE_RANK\necho $NODE_RANK; hostname\n"


@pytest.mark.parametrize(
    "name, option",
    [
        ("a b%x.out", "--output={}/a b%%x.out.rank%t"),  # srun's patterns: a literal % doubled, %t its task
        ("back\\slash.out", None),  # a \\ turns srun's patterns off: the ranks stay on its relay
        (None, None),  # not a regular file (/dev/null)
    ],
)
def test_the_batch_shell_names_each_ranks_file_after_its_own_output(tmp_path, name, option):
    out = tmp_path / name if name else Path(os.devnull)
    script = f'{slurm_script.RANK_OUTPUT}\nprintf "[%s]\\n" ${{YF_RANK_OUTPUT:+"$YF_RANK_OUTPUT"}} >&2\n'
    with open(out, "w") as stdout:
        shown = subprocess.run(["/bin/sh", "-c", script], stdout=stdout, stderr=subprocess.PIPE, text=True, check=True)
    expected = f"[{option.format(os.path.realpath(tmp_path))}]" if option else "[]"
    assert shown.stderr.strip() == expected


# -- Determined ------------------------------------------------------------------------------------


def _experiment(launcher: str, command, **det):
    data = {"command": command} if command else {}
    return spec_from_data(
        {
            "name": "x",
            "kind": "experiment",
            **data,
            "launcher": launcher,
            "resources": {"nodes": 2, "gpus": 4},
            "determined": {"searcher": {"name": "single", "metric": "loss"}, **det},
        }
    )


@pytest.mark.parametrize(
    "launcher, module",
    [
        ("torchrun", "determined.launch.torch_distributed"),
        ("deepspeed", "determined.launch.deepspeed"),
        ("horovod", "determined.launch.horovod"),
    ],
)
def test_determined_entrypoints_for_each_launcher(launcher, module):
    config = det_submit.experiment_config(_experiment(launcher, ARGV))
    assert config["entrypoint"] == ["python3", "-m", module, *ARGV]  # the launch module runs a command
    assert config["resources"]["slots_per_trial"] == 8
    line = det_submit.experiment_config(_experiment(launcher, "python3 train.py --epochs 3"))["entrypoint"]
    assert line == f"python3 -m {module} python3 train.py --epochs 3"
    legacy = det_submit.experiment_config(_experiment(launcher, None, entrypoint="model_def:MyTrial"))
    assert legacy["entrypoint"] == f"python3 -m {module} --trial model_def:MyTrial"
    det_submit.check(_experiment(launcher, ARGV))


def test_determined_refuses_accelerate_and_offers_horovod():
    with pytest.raises(BackendError, match="use torchrun, deepspeed, horovod or none"):
        det_submit.check(_experiment("accelerate", ARGV))
    with pytest.raises(BackendError, match="no tensorflow launcher"):
        det_submit.check(_experiment("tensorflow", ARGV))
    assert det_submit.LAUNCHERS == ("torchrun", "deepspeed", "horovod", "none")


# -- one list of launchers -------------------------------------------------------------------------


def test_the_spec_and_the_form_share_one_launcher_list_with_horovod():
    assert ff.launcher().choices == launchers.LAUNCHERS
    assert launchers.LAUNCHERS == ("torchrun", "deepspeed", "accelerate", "horovod", "tensorflow", "none")
    assert (
        spec_from_data({"name": "x", "kind": "multi-node", "launcher": "horovod", "command": ARGV}).launcher
        == "horovod"
    )
    with pytest.raises(SpecError, match="torchrun, deepspeed, accelerate, horovod, none|one of"):
        spec_from_data({"name": "x", "kind": "multi-node", "launcher": "mpirun", "command": ARGV})


@pytest.mark.parametrize(
    "kind, job_kind, choices",
    [
        ("slurm", JobKind.MULTI_NODE, ("torchrun", "deepspeed", "accelerate", "horovod", "tensorflow", "none")),
        ("kubernetes", JobKind.MULTI_NODE, ("torchrun", "deepspeed", "accelerate", "tensorflow", "none")),
        ("determined", JobKind.EXPERIMENT, ("torchrun", "deepspeed", "horovod", "none")),
    ],
)
def test_each_backend_form_offers_the_launchers_it_can_run(home, kind, job_kind, choices):
    options = {
        "slurm": {},
        "kubernetes": {"namespace": "ml", "kubeconfig": "/nonexistent"},
        "determined": {"master": "http://127.0.0.1:9"},
    }[kind]
    backend = registry.create(ClusterConfig("c", kind, options=options))
    field = next(f for f in backend.form_fields(job_kind) if f.key == "launcher")
    assert field.choices == choices
