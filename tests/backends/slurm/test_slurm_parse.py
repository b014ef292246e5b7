"""Slurm parsers and the sbatch renderer, on output captured from the real test cluster
(tests/data/slurm: a 2-node GPU job, an array with running tasks and a pending remainder, a held job
with a hostile name, a drained node), plus Hypothesis fuzzing. No cluster needed."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from paths import DATA as TEST_DATA
from slurmreference import ReferenceCaches, parse_squeue_text, squeue_raws

from yanflow_tui.backends.slurm import parse
from yanflow_tui.backends.slurm.script import render
from yanflow_tui.backends.slurm.transport import parse_ssh_option, script_for
from yanflow_tui.config import parse_config
from yanflow_tui.errors import ConfigError
from yanflow_tui.model import GpuState, JobKind, JobState
from yanflow_tui.spec import parse_spec

DATA = TEST_DATA / "slurm"


def jobs_from(name: str):
    text = (DATA / name).read_text()
    caches = ReferenceCaches()
    raws = parse.parse_squeue_json(text) if name.endswith(".json") else parse_squeue_text(text, caches)
    return {j.id: j for j in parse.build_jobs(raws, "c", caches)}


def test_captured_squeue_json_gives_jobs_arrays_and_gpus():
    jobs = jobs_from("squeue.json")
    train = next(j for j in jobs.values() if j.name == "train-2x4")
    assert train.state is JobState.RUNNING and train.nodes == ("gpu01", "gpu02")
    assert train.gpus == 8 and train.gpu_indices == (0, 1, 2, 3, 0, 1, 2, 3) and train.parent == ""
    assert ("Comment", "yanflow:capture") in train.details
    sweep = next(j for j in jobs.values() if j.name == "sweep" and j.parent == "")
    children = [j for j in jobs.values() if j.parent == sweep.id]
    assert sorted(j.id for j in children) == sorted([f"{sweep.id}_0", f"{sweep.id}_1", f"{sweep.id}_[2-5%2]"])
    assert sweep.state is JobState.RUNNING and sweep.raw_state == "ARRAY"
    remainder = jobs[f"{sweep.id}_[2-5%2]"]
    assert remainder.state is JobState.PENDING and remainder.reason == "JobArrayTaskLimit"
    held = next(j for j in jobs.values() if j.name == "odd | name;$(x)")
    assert held.state is JobState.PENDING and held.reason == "JobHeldUser" and held.raw_state == "PENDING"
    big = next(j for j in jobs.values() if j.name == "big")
    assert big.gpus == 8 and big.nodes == ("gpu03",)


def test_a_job_that_never_ran_has_no_nodes_not_sacct_s_none_assigned():
    raw = parse.raw_from_json({"job_id": 7, "name": "x", "job_state": "CANCELLED", "nodes": "None assigned"})
    (job,) = parse.build_jobs([raw], "c", ReferenceCaches())
    assert job.nodes == ()


def test_text_and_json_captures_agree_on_every_row():
    by_json, by_text = jobs_from("squeue.json"), jobs_from("squeue.txt")
    assert by_json.keys() == by_text.keys()
    for key, a in by_json.items():
        b = by_text[key]
        assert (
            a.name,
            a.user,
            a.state,
            a.raw_state,
            a.reason,
            a.nodes,
            a.gpus,
            a.parent,
            a.submit_time,
            a.start_time,
        ) == (b.name, b.user, b.state, b.raw_state, b.reason, b.nodes, b.gpus, b.parent, b.submit_time, b.start_time), (
            key
        )


def test_captured_sinfo_gives_gpus_per_index_and_the_drained_node():
    caches = ReferenceCaches()
    nodes = {n.name: n for n in parse.parse_sinfo_json(json.loads((DATA / "sinfo.json").read_text()), "c", caches)}
    assert set(nodes) == {"gpu01", "gpu02", "gpu03", "gpu04", "cpu01", "cpu02"}
    gpu02 = nodes["gpu02"]
    assert (gpu02.gpus_total, gpu02.gpus_allocated, gpu02.gpu_type, gpu02.state) == (8, 4, "a100", "mixed")
    assert [g.state for g in gpu02.gpus] == [GpuState.ALLOCATED] * 4 + [GpuState.FREE] * 4
    assert nodes["gpu01"].gpus_allocated == 8 and nodes["gpu04"].gpus_allocated == 0
    assert nodes["cpu02"].state == "drain" and nodes["cpu02"].reason == "maint test"
    assert nodes["gpu01"].partitions == ("gpu",) and nodes["cpu01"].gpus_total == 0
    text_nodes = {n.name: n for n in parse.parse_sinfo_text((DATA / "sinfo.txt").read_text(), "c", caches)}
    for name, node in nodes.items():
        other = text_nodes[name]
        assert (node.state, node.gpus_total, node.gpus_allocated, node.gpu_type, node.reason, node.cpus_total) == (
            other.state,
            other.gpus_total,
            other.gpus_allocated,
            other.gpu_type,
            other.reason,
            other.cpus_total,
        )


def test_state_normalisation_short_and_long_forms():
    table = {
        "PD": JobState.PENDING,
        "PENDING": JobState.PENDING,
        "R": JobState.RUNNING,
        "RUNNING": JobState.RUNNING,
        "CG": JobState.COMPLETING,
        "CD": JobState.COMPLETED,
        "COMPLETED": JobState.COMPLETED,
        "F": JobState.FAILED,
        "CA": JobState.CANCELLED,
        "CANCELLED by 0": JobState.CANCELLED,
        "TO": JobState.FAILED,
        "TIMEOUT": JobState.FAILED,
        "NF": JobState.FAILED,
        "OOM": JobState.FAILED,
        "OUT_OF_MEMORY": JobState.FAILED,
        "PR": JobState.CANCELLED,
        "PREEMPTED": JobState.CANCELLED,
        "S": JobState.RUNNING,
        "weird": JobState.UNKNOWN,
        "": JobState.UNKNOWN,
    }
    assert {k: parse.normalise_state(k) for k in table} == table
    assert parse.normalise_state(["RUNNING", "COMPLETING"]) is JobState.RUNNING


def test_gres_hostlists_and_output_patterns():
    assert parse.parse_gres("gpu:a100:3(IDX:0-2)") == parse.Gres(3, "a100", (0, 1, 2))
    assert parse.parse_gres("gpu:a100:8") == parse.Gres(8, "a100", ())
    assert parse.parse_gres("gpu:4(IDX:0,2,5-6)").indices == (0, 2, 5, 6)
    assert parse.parse_gres("gpu:a100:2(IDX:0-1),gpu:h100:1(IDX:4)") == parse.Gres(3, "a100", (0, 1, 4))
    assert parse.parse_gres("(null)").count == 0 and parse.parse_gres("gpu:a100:0(IDX:N/A)").count == 0
    assert parse.expand_hostlist("gpu[01-03,07],cpu01") == ("gpu01", "gpu02", "gpu03", "gpu07", "cpu01")
    raw = parse.RawJob(
        "12", "10", "2", "my job", "bob", "RUNNING", "", ("gpu02",), 0, (), None, None, None, workdir="/home/bob"
    )
    assert (
        parse.expand_output_path("%x-%j-%A_%a-%N-%u-%%-%4a.out", raw) == "/home/bob/my job-12-10_2-gpu02-bob-%-0002.out"
    )
    assert parse.expand_output_path("/abs/%j.out", raw) == "/abs/12.out"


def test_a_newline_in_a_name_makes_text_rows_ambiguous():
    line = parse.SEP.join(
        [
            "5",
            "5",
            "N/A",
            "PENDING",
            "None",
            "u",
            "1",
            "",
            "N/A",
            "1",
            "N/A",
            "N/A",
            "gpu",
            "a",
            "q",
            "1",
            "1",
            "5",
            "first",
        ]
    )
    caches = ReferenceCaches()
    try:
        parse_squeue_text(line + "\nsecond\n", caches)
    except parse.AmbiguousRows:
        pass
    else:  # pragma: no cover
        raise AssertionError("a split row must not parse")
    assert [r.name for r in parse_squeue_text(line + parse.SEP + "x\n", caches)] == ["first\x1fx"]


NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            NAME,
            st.sampled_from(
                ["PD", "R", "CG", "CD", "F", "CA", "TO", "NF", "OOM", "PR", "RUNNING", "PENDING", "NODE_FAIL"]
            ),
            st.integers(0, 3),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_fuzzed_text_rows_never_crash_or_drop(rows):
    lines, expected = [], set()
    for i, (name, state, gpus, array) in enumerate(rows, 1):
        array_id, task = (str(1000 + i), "3") if array else (str(i), "N/A")
        tres = f"gres:gpu:a100:{gpus}" if gpus else "N/A"
        lines.append(
            parse.SEP.join(
                [
                    str(i),
                    array_id,
                    task,
                    state,
                    "None",
                    "u",
                    "1",
                    "gpu01",
                    tres,
                    "100",
                    "N/A",
                    "N/A",
                    "gpu",
                    "(null)",
                    "(null)",
                    "1",
                    "1",
                    str(i),
                    name,
                ]
            )
        )
        expected.add(f"{array_id}_3" if array else str(i))
    caches = ReferenceCaches()
    raws = parse_squeue_text("\n".join(lines) + "\n", caches)
    jobs = parse.build_jobs(raws, "c", caches)
    assert {j.id for j in jobs if j.parent or not any(r.array_job_id == j.id for r in raws)} >= expected
    assert [r.name for r in raws] == [r[0] for r in rows]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "job_id": st.integers(1, 10**7),
                "name": st.text(max_size=30),
                "user_name": st.text(max_size=10),
                "job_state": st.one_of(st.text(max_size=12), st.sampled_from(["RUNNING", "PENDING", "COMPLETED"])),
                "state_reason": st.text(max_size=10),
                "nodes": st.text(max_size=20),
                "tres_per_node": st.text(max_size=20),
                "gres_detail": st.lists(st.text(max_size=25), max_size=3),
                "array_job_id": st.integers(0, 5),
                "array_task_id": st.one_of(st.none(), st.integers(0, 9)),
                "submit_time": st.integers(-5, 2**40),
                "node_count": st.integers(0, 9),
            }
        ),
        max_size=20,
    )
)
def test_fuzzed_json_never_crashes_or_drops_rows(records):
    caches = ReferenceCaches()
    raws = parse.parse_squeue_json({"jobs": records}, caches)
    assert len(raws) == len(records)
    jobs = parse.build_jobs(raws, "c", caches)
    assert len([j for j in jobs if j.raw_state != "ARRAY"]) == len(records)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_fuzzed_gres_and_sinfo_never_crash(gres, used):
    parse.parse_gres(gres)
    caches = ReferenceCaches()
    parse.parse_sinfo_json({"nodes": [{"name": "n", "state": used, "gres": gres, "gres_used": used}]}, "c", caches)
    parse.expand_hostlist(gres)
    parse.expand_hostlist(gres, caches)


HOSTILE = "-q'\"; $(touch /tmp/yf-marker) `touch /tmp/yf-marker2` \\ end"


def test_render_puts_unsafe_values_in_argv_and_safe_ones_in_sbatch_lines():
    spec = parse_spec(f"""
name: {json.dumps(HOSTILE)}
kind: slurm
command: [python, train.py, --lr, "0.1"]
workdir: /home/u/my project
env: {{A_B: "x y $HOME"}}
resources: {{nodes: 2, gpus: 4, cpus: 8, memory: 32G}}
slurm: {{partition: gpu, account: ml, qos: high, time: "01:00:00", array: "0-3", gpu_type: a100,
         output: out-%j.txt}}
""")
    r = render(spec, "tag-1")
    assert r.argv[:2] == ("sbatch", "--parsable")
    assert f"--job-name={HOSTILE}" in r.argv and "--chdir=/home/u/my project" in r.argv
    for line in (
        "#SBATCH --nodes=2",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=ml",
        "#SBATCH --qos=high",
        "#SBATCH --time=01:00:00",
        "#SBATCH --array=0-3",
        "#SBATCH --gres=gpu:a100:4",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=32G",
        "#SBATCH --output=out-%j.txt",
        "#SBATCH --comment=yanflow:tag-1",
        "export A_B='x y $HOME'",
        "python train.py --lr 0.1",
    ):
        assert line in r.script.splitlines(), line
    assert HOSTILE not in r.script
    # The transport's /bin/sh script hands sbatch exactly these words: check with a real shell.
    script = script_for(["printf", "%s\\n", *r.argv], r.script).replace("exec printf", "printf")
    out = subprocess.run(["/bin/sh", "-s"], input=script, capture_output=True, text=True).stdout
    assert out.splitlines()[: len(r.argv)] == list(r.argv)
    assert not Path("/tmp/yf-marker").exists() and not Path("/tmp/yf-marker2").exists()
    assert shlex.split(shlex.join(r.argv)) == list(r.argv)


def test_ssh_option_forms():
    assert parse_ssh_option("alice@login.example:2200") == parse_ssh_option(
        {"host": "login.example", "port": 2200, "user": "alice"}
    )
    assert parse_ssh_option("login").host == "login" and parse_ssh_option("login").port is None
    for bad in ("a@b@c", "", {"port": 1}, {"host": "h", "prot": 2}, 5):
        try:
            parse_ssh_option(bad)
        except ConfigError as exc:
            assert "ssh" in str(exc)
        else:  # pragma: no cover
            raise AssertionError(bad)


def test_slurm_clusters_refresh_every_10_s_unless_configured():
    text = "clusters:\n  - {name: a, kind: slurm}\n  - {name: b, kind: local}\n"
    cfg = parse_config(text, "c.yaml", env={})
    assert [c.refresh_seconds for c in cfg.clusters] == [10.0, 5.0]
    cfg = parse_config("refresh_seconds: 3\n" + text, "c.yaml", env={})
    assert [c.refresh_seconds for c in cfg.clusters] == [3.0, 3.0]
    cfg = parse_config("clusters:\n  - {name: a, kind: slurm, refresh_seconds: 2}\n", "c.yaml", env={})
    assert cfg.clusters[0].refresh_seconds == 2.0 and JobKind.SLURM.value == "slurm"


def test_multi_node_torchrun_runs_one_task_per_node_under_srun():
    spec = parse_spec(
        "name: ddp\nkind: multi-node\nlauncher: torchrun\ncommand: [train.py, --epochs, '3']\n"
        "resources: {nodes: 2, gpus: 8}\n"
    )
    r = render(spec, "t")
    lines = r.script.splitlines()
    assert "#SBATCH --nodes=2" in lines and "#SBATCH --ntasks-per-node=1" in lines and "#SBATCH --gres=gpu:8" in lines
    step = shlex.split(r.script.split("\nsrun ", 1)[1])
    assert step[:6] == [
        "--ntasks-per-node=1",
        "--kill-on-bad-exit=1",
        "${YF_RANK_OUTPUT:+$YF_RANK_OUTPUT}",  # each rank's own output file, where the job's output is a file
        "/bin/sh",
        "-c",
        "NODE_RANK=$SLURM_NODEID; export NODE_RANK\n"
        # torchrun's error file beside the rank's own output (unless the spec's env names one)
        '[ -n "${TORCHELASTIC_ERROR_FILE-}" ] || { YF_LOG=$(readlink "/proc/$$/fd/1" 2>/dev/null) && '
        '[ -f "$YF_LOG" ] && TORCHELASTIC_ERROR_FILE="$YF_LOG.error.json" && export TORCHELASTIC_ERROR_FILE; }\n'
        'exec torchrun --nnodes="$NNODES" '
        '--node_rank="$NODE_RANK" --nproc_per_node="$NPROC_PER_NODE" '
        '--master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT" train.py --epochs 3\n',
    ]
    assert "NNODES=$SLURM_NNODES NPROC_PER_NODE=8" in lines


async def test_an_squeue_that_rejects_the_format_is_read_as_json_from_then_on():
    """One failed ``-o`` per cluster, not one per refresh."""
    from yanflow_tui.backends.slurm.backend import SlurmBackend
    from yanflow_tui.backends.slurm.transport import Result
    from yanflow_tui.config import ClusterConfig

    json_text = (DATA / "squeue.json").read_text()

    class Transport:
        def __init__(self):
            self.calls = []

        async def run(self, argv, stdin_data=None, timeout=None):
            self.calls.append(tuple(argv))
            if "-o" in argv:
                return Result(tuple(argv), 1, "", "squeue: error: Invalid format specification")
            return Result(tuple(argv), 0, json_text, "")

        async def check(self, argv, stdin_data=None, timeout=None):
            return (await self.run(argv)).stdout

    transport = Transport()
    backend = SlurmBackend(ClusterConfig("hpc", "slurm"), transport)
    first, second = await squeue_raws(backend), await squeue_raws(backend)
    assert first and [j.job_id for j in first] == [j.job_id for j in second]
    assert [("-o" in argv) for argv in transport.calls] == [True, False, False]


async def test_the_queue_is_read_from_the_text_straight_to_jobs_and_from_json_after_an_ambiguous_text():
    """``_queue`` gives what ``build_jobs(squeue_raws(backend))`` gives (the reference parser); a name
    with a newline sends it to JSON, which it keeps reading for a while instead of asking twice per
    refresh."""
    from yanflow_tui.backends.slurm.backend import SlurmBackend
    from yanflow_tui.backends.slurm.transport import Result
    from yanflow_tui.config import ClusterConfig

    text = (DATA / "squeue.txt").read_text()
    json_text = (DATA / "squeue.json").read_text()

    class Transport:
        def __init__(self):
            self.calls = []
            self.text = text

        async def run(self, argv, stdin_data=None, timeout=None):
            self.calls.append("-o" in argv)
            return Result(tuple(argv), 0, self.text if "-o" in argv else json_text, "")

        async def check(self, argv, stdin_data=None, timeout=None):
            return (await self.run(argv)).stdout

    transport = Transport()
    backend = SlurmBackend(ClusterConfig("hpc", "slurm"), transport)
    caches = ReferenceCaches()
    jobs = await backend._queue()
    assert jobs and jobs == parse.build_jobs(await squeue_raws(backend), "hpc", caches)
    assert any(j.parent for j in jobs) and transport.calls == [True, True]
    transport.text = text.replace("\n", "\nsecond line of a name\n", 1)
    from_json = await backend._queue()
    assert from_json == parse.build_jobs(parse.parse_squeue_json(json_text), "hpc", caches)
    assert await backend._queue() == from_json and transport.calls == [True, True, True, False, False]


def test_json_that_reports_errors_and_no_data_is_a_failure_not_an_empty_cluster():
    """What 22.05's squeue and sinfo --json print, exit 0, while slurmctld is down (recorded)."""
    import pytest

    from yanflow_tui.backends.slurm import history as slurm_history
    from yanflow_tui.errors import BackendError

    squeue = {
        "meta": {},
        "errors": [
            {
                "description": "Failed while looking for jobs",
                "error_number": -1,
                "error": "Unspecified error",
                "source": "slurm_load_jobs",
            }
        ],
        "jobs": [],
    }
    sinfo = {"meta": {}, "errors": [{"error": "Unspecified error", "errno": -1}], "nodes": []}
    with pytest.raises(BackendError, match="squeue --json failed: Failed while looking for jobs Unspecified error"):
        parse.parse_squeue_json(json.dumps(squeue))
    with pytest.raises(BackendError, match="sinfo --json failed: Unspecified error"):
        parse.parse_sinfo_json(sinfo, "c", ReferenceCaches())
    with pytest.raises(BackendError, match="sacct --json failed"):
        slurm_history.parse_sacct_json(json.dumps({"errors": [{"error": "Unspecified error"}], "jobs": []}))
    assert parse.parse_squeue_json(json.dumps({"errors": [], "jobs": []})) == []  # an empty queue is fine


def test_the_text_parser_unpacks_the_columns_in_the_format_order():
    assert parse.TEXT_ORDER == tuple(name for name, _ in parse.SQUEUE_FIELDS)


def test_node_lists_expand_the_same_from_the_cache_and_after_it_is_cleared():
    text = "gpu[0012-0014,0040],rack[1-2]-n[01-02],cpu0003,(null)"
    want = (
        "gpu0012",
        "gpu0013",
        "gpu0014",
        "gpu0040",
        "rack1-n01",
        "rack1-n02",
        "rack2-n01",
        "rack2-n02",
        "cpu0003",
    )
    caches = ReferenceCaches()
    assert parse.expand_hostlist(text, caches) == want
    assert parse.expand_hostlist(text, caches) is parse.expand_hostlist(text, caches)
    caches.clear()
    assert parse.expand_hostlist(text, caches) == want and parse.expand_hostlist("", caches) == ()
    assert parse.expand_hostlist(text) == want  # with no caches: worked out anew


def test_repeated_squeue_words_are_shared_between_rows():
    rows = "\n".join(
        parse.SEP.join(
            [str(i), str(i), "N/A", "RUNNING", "None", "alice", "1", "gpu01", "gres:gpu:2", "100", "100", "NONE"]
            + ["gpu", "(null)", "(null)", "UNLIMITED", "8", str(i), "train"]
        )
        for i in (1, 2)
    )
    caches = ReferenceCaches()
    first, second = parse.build_jobs(parse_squeue_text(rows + "\n", caches), "c", caches)
    assert first.user is second.user and first.nodes[0] is second.nodes[0] and first.details is second.details
    assert first.submit_time is second.submit_time and first.gpus == 2 and first.reason == ""


def test_a_node_in_two_partitions_is_one_node_with_both():
    row = parse.SEP.join(
        ["gpu01", "idle", "gpu:a100:8", "gpu:a100:0(IDX:N/A)", "gpu", "0/64/0/64", "1000", "0", "none"]
    )
    other = row.replace(f"{parse.SEP}gpu{parse.SEP}", f"{parse.SEP}debug{parse.SEP}")
    (node,) = parse.parse_sinfo_text(f"{row}\n{other}\n", "c", ReferenceCaches())
    assert node.partitions == ("gpu", "debug") and node.gpus_total == 8


def test_nodes_alike_share_one_tuple_of_gpus():
    """5,000 nodes of eight GPUs: their Gpus made once per kind of node (count, type, the ones in use,
    held or not), not 40,000 times; each node's GPUs as before."""

    def node(name: str, used: str, state: str = "mixed", reason: str = "") -> dict:
        return {"name": name, "state": state, "gres": "gpu:a100:4", "gres_used": used, "reason": reason}

    data = {
        "nodes": [
            node("g1", "gpu:a100:2(IDX:0-1)"),
            node("g2", "gpu:a100:2(IDX:0-1)"),
            node("g3", "gpu:a100:2(IDX:2-3)"),
            node("g4", "gpu:a100:0", "drained", "disk"),
            node("g5", "gpu:a100:0", "drained", "fan"),
            node("g6", "gpu:a100:0", "drained", "fan"),
        ]
    }
    g1, g2, g3, g4, g5, g6 = parse.parse_sinfo_json(data, "c", ReferenceCaches())
    assert g1.gpus is g2.gpus and g5.gpus is g6.gpus
    assert g3.gpus is not g1.gpus and g4.gpus is not g5.gpus
    assert [g.state for g in g3.gpus] == [GpuState.FREE] * 2 + [GpuState.ALLOCATED] * 2
    assert [(g.state, g.reason) for g in g4.gpus] == [(GpuState.UNAVAILABLE, "disk")] * 4
    assert [g.reason for g in g5.gpus] == ["fan"] * 4 and [g.index for g in g1.gpus] == [0, 1, 2, 3]


def test_task_count_reads_every_form_of_an_array_range():
    from yanflow_tui.backends.slurm.parse import task_count

    assert [task_count(t) for t in ("4", "0,3", "0-5", "0-9%2", "1-9:2", "0-2,7,10-11", "weird")] == [
        1,
        2,
        6,
        10,
        5,
        6,
        1,
    ]
