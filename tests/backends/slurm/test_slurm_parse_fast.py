"""The quick paths of the squeue parser (issue #17): the cyclic collector paused and restored around a
parse, numbered hostlists sliced from name tables, lines and Jobs reused from a recent parse, and
``maker`` factories: each gives what the plain path gives, on odd rows too. No cluster needed."""

from __future__ import annotations

import gc
import random
import sys
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import DATA as TEST_DATA
from slurmreference import ReferenceCaches, parse_squeue_text

from yanflow_tui import speed
from yanflow_tui.backends.slurm import parse
from yanflow_tui.model import Gpu, GpuState, Job, JobKind, JobState, LogLine, Node
from yanflow_tui.speed import Heap, maker

COLUMNS = [name for name, _ in parse.SQUEUE_FIELDS]


def row(**values: str) -> str:
    cols = {
        "job_id": "5",
        "array_job_id": "5",
        "array_task": "N/A",
        "state": "PENDING",
        "reason": "None",
        "user": "u",
        "node_count": "1",
        "nodes": "",
        "tres_per_node": "N/A",
        "submit": "1795995071",
        "start": "N/A",
        "end": "N/A",
        "partition": "gpu",
        "account": "(null)",
        "qos": "normal",
        "time_limit": "1:00:00",
        "cpus": "1",
        "display_id": "5",
        "name": "job",
    }
    cols.update(values)
    return parse.SEP.join(cols[c] for c in COLUMNS)


ODD_ROWS = [
    # an array: running tasks a line each, the pending remainder as one line
    row(job_id="11", array_job_id="10", array_task="0", state="RUNNING", nodes="gpu[0001-0002]", start="1795995100"),
    row(job_id="12", array_job_id="10", array_task="1", state="COMPLETING", nodes="gpu0003", start="1795995101"),
    row(job_id="10", array_job_id="10", array_task="2-99%4", reason="JobArrayTaskLimit", display_id="10_[2-99%4]"),
    row(job_id="20", array_job_id="20", array_task="[3,5]", state="PENDING", reason="Priority"),
    # pending reasons, the expected start of a pending job, a reason with a node list in it
    row(job_id="30", reason="ReqNodeNotAvail, UnavailableNodes:gpu[0012,0040-0041]", start="1796000000"),
    row(job_id="31", reason="(null)", account="ml", qos="(null)"),
    # names with the delimiter, spaces, markup, shell, unicode, 200 characters, none at all
    row(job_id="40", name=f"with{parse.SEP}delimiter"),
    row(job_id="41", name="eval|mmlu [bold]x[/] $(rm -rf /) `x`"),
    row(job_id="42", name="名前-実験 α-β γ"),
    row(job_id="43", name="x" * 200),
    row(job_id="44", name=""),
    # node lists: scattered, mixed widths, two prefixes, a suffix, a multi-bracket one, odd ones
    row(job_id="50", state="RUNNING", nodes="gpu[0012,0040,0977],cpu0003", tres_per_node="gres:gpu:a100:2"),
    row(job_id="51", state="RUNNING", nodes="n[8-11,013,7]", node_count="6", tres_per_node="gres/gpu:4"),
    row(job_id="52", state="RUNNING", nodes="rack[1-2]-n[01-02]", node_count="4"),
    row(job_id="53", state="RUNNING", nodes="gpu[05-3],cpu[9]-ib", node_count="1"),
    row(job_id="54", state="FAILED", nodes="a, b", end="1795999999", start="1795995200"),
    row(job_id="55", state="CANCELLED by 0", nodes="(null)", end="0", start="Unknown"),
    row(job_id="56", state="TIMEOUT", nodes="n[99998-100001]", node_count="4", end="1795999999"),
    row(job_id="57", state="RUNNING", nodes="gpu١٢", cpus="N/A", time_limit="UNLIMITED", submit="N/A"),
]


def plain_raw(line: str) -> parse.RawJob:
    """One row the plain way: the dataclass's own constructor, the general hostlist expansion."""
    cols = line.split(parse.SEP, len(COLUMNS) - 1)
    c = dict(zip(COLUMNS, cols, strict=True))
    array_job, task = c["array_job_id"], c["array_task"]
    if task in ("N/A", "", "(null)") or array_job in ("", "N/A", "0"):
        array_job = task = ""
    elif task.startswith("[") and task.endswith("]"):
        task = task[1:-1]
    nodes = c["nodes"]
    hosts = tuple(p.strip() for p in nodes.split(",") if p.strip() not in ("", "(null)", "N/A"))
    if "[" in nodes or "(" in nodes:
        hosts = tuple(parse._expand_hostlist(nodes))
    tres = c["tres_per_node"]
    gpus = 0 if tres in ("N/A", "(null)") else parse._gpus_from_tres(tres, parse._int(c["node_count"], 1))

    def word(value: str) -> str:
        return "" if value in ("none", "None", "(null)", "") else value

    return parse.RawJob(
        c["job_id"],
        array_job,
        task,
        c["name"],
        c["user"],
        c["state"],
        word(c["reason"]),
        hosts,
        gpus,
        (),
        parse._time(c["submit"]),
        parse._time(c["start"]),
        parse._time(c["end"]),
        c["partition"],
        word(c["account"]),
        word(c["qos"]),
        c["time_limit"],
        parse._int(c["cpus"]),
    )


def values(obj: object) -> tuple:
    return tuple(getattr(obj, f.name) for f in fields(obj))  # type: ignore[arg-type]


def test_odd_rows_parse_as_the_plain_path_parses_them_cold_and_warm():
    text = "\n".join(ODD_ROWS) + "\n"
    expected = [plain_raw(line) for line in ODD_ROWS]
    caches = ReferenceCaches()
    cold = parse_squeue_text(text, caches)
    assert [values(r) for r in cold] == [values(r) for r in expected]
    assert cold == expected
    warm = parse_squeue_text(text, caches)
    assert warm == expected and all(a is b for a, b in zip(warm, cold, strict=True))  # the same rows, reused
    jobs = parse.build_jobs(cold, "c", caches)
    assert jobs == parse.build_jobs(expected, "c", caches) == parse.build_jobs(warm, "c", caches)
    by_id = {j.id: j for j in jobs}
    assert by_id["10"].raw_state == "ARRAY" and by_id["10_[2-99%4]"].parent == "10"
    assert by_id["20_[3,5]"].state is JobState.PENDING
    assert by_id["40"].name == f"with{parse.SEP}delimiter" and by_id["42"].name == "名前-実験 α-β γ"
    expected_start = ("Expected start", parse._local(cold[4].start, None))
    assert by_id["30"].reason.startswith("ReqNodeNotAvail") and expected_start in by_id["30"].details
    assert by_id["50"].nodes == ("gpu0012", "gpu0040", "gpu0977", "cpu0003") and by_id["50"].gpus == 2
    assert by_id["51"].nodes == ("n8", "n9", "n10", "n11", "n013", "n7")
    assert by_id["52"].nodes == ("rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02")
    assert by_id["56"].nodes == ("n99998", "n99999", "n100000", "n100001")
    assert by_id["55"].state is JobState.CANCELLED and by_id["55"].end_time is None


def test_a_changed_line_is_parsed_again_and_the_others_are_reused():
    caches = ReferenceCaches()
    first = parse_squeue_text("\n".join(ODD_ROWS), caches)
    changed = list(ODD_ROWS)
    changed[0] = changed[0].replace("RUNNING", "COMPLETING")
    second = parse_squeue_text("\n".join(changed), caches)
    assert second[0].state == "COMPLETING" and first[0].state == "RUNNING"
    assert all(a is b for a, b in zip(first[1:], second[1:], strict=True))
    one, two = parse.build_jobs(first, "c", caches), parse.build_jobs(second, "c", caches)
    assert one[0].state is JobState.RUNNING and two[0].state is JobState.COMPLETING  # the array group follows
    assert parse.build_jobs(second, "other", caches)[1].cluster == "other"  # a Job is kept for its own cluster only


def test_the_caches_stay_bounded_by_the_latest_texts():
    caches = ReferenceCaches()
    for poll in range(40):
        lines = [row(job_id=str(poll * 1000 + i), name=f"poll {poll}") for i in range(300)]
        parse.build_jobs(parse_squeue_text("\n".join(lines), caches), "c", caches)
    assert len(caches.rows) + len(caches.rows_old) <= 2 * (300 + 300 // 8 + parse._ROWS_SLACK)
    assert len(caches.jobs) + len(caches.jobs_old) <= 2 * (300 + 300 // 8 + parse._ROWS_SLACK)
    big = [row(job_id=str(i)) for i in range(6000)]
    for _ in range(3):
        parse_squeue_text("\n".join(big), caches)
        parse_squeue_text("\n".join(big[:10]), caches)  # another cluster's small queue between polls
    assert len(caches.rows) + len(caches.rows_old) <= 2 * (6000 + 6000 // 8 + parse._ROWS_SLACK)
    again = parse_squeue_text("\n".join(big), caches)
    assert again[0] is parse_squeue_text("\n".join(big), caches)[0]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["gpu", "cpu", "n-", "rack1-n", "a.b", "N/A"]),
            st.lists(
                st.tuples(st.integers(0, 120), st.one_of(st.none(), st.integers(-2, 8)), st.integers(1, 4)),
                max_size=5,
            ),
            st.sampled_from(["", "-ib", "[1-2]"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_numbered_hostlists_expand_as_the_general_expansion(items):
    parts = []
    for prefix, ranges, suffix in items:
        if not ranges:
            parts.append(prefix)
            continue
        text = ",".join(
            str(lo).zfill(w) + ("" if span is None else "-" + str(lo + span).zfill(w)) for lo, span, w in ranges
        )
        parts.append(f"{prefix}[{text}]{suffix}")
    text = ",".join(parts)
    caches = ReferenceCaches()
    assert parse.expand_hostlist(text, caches) == tuple(parse._expand_hostlist(text)), text
    assert parse.expand_hostlist(text) == tuple(parse._expand_hostlist(text)), text


@pytest.mark.parametrize(
    "text",
    [
        "gpu[0012-0015,0040],cpu0003",
        "gpu[0834,0848,1041],cpu[0239,0288]",
        "a,gpu[1-3],b,N/A,c[7]",
        "gpu[8-10,09,7]",
        "gpu[70000-70002,65535]",
        "n[1,2][3]",  # brackets back to back
        "gpu[01-02]-ib,cpu[1-2]",  # a suffix
        "gpu[1-],cpu1",  # an open range
        "gpu[1--2]",
        "gpu[٣]",  # a non-ASCII digit
        "gpu[1,,2]",
        "gpu[]",
        "a,,gpu[1]",
        "gpu[1-2], cpu01",  # whitespace
        "gpu[1]]",
        "x(1)[1-2]",
        "gpu[1",
        "gpu[1-2],rack[1-2]x[3]",
    ],
)
def test_the_quick_hostlist_path_gives_what_the_regex_and_general_paths_give(text):
    """_quick_hostlist answers for the usual forms and leaves the rest (None) to the regex path,
    then to the general expansion: the result is the same either way, names shared."""
    caches = ReferenceCaches()
    quick = parse._quick_hostlist(text, caches)
    slow = parse._numbered_hostlist(text, caches)
    general = tuple(parse._expand_hostlist(text))
    assert parse.expand_hostlist(text, caches) == (slow if slow is not None else general)
    # with no caches (no tables): the same answers, worked out anew
    assert parse._quick_hostlist(text) == quick and parse._numbered_hostlist(text) == slow
    assert parse.expand_hostlist(text) == parse.expand_hostlist(text, caches)
    if quick is not None:
        assert quick == (slow if slow is not None else general)
        assert all(a is b for a, b in zip(quick, parse._quick_hostlist(text, caches)))  # from the tables, interned
    assert (quick is None) == (text in QUICK_DECLINES)


QUICK_DECLINES = {
    "n[1,2][3]",
    "gpu[01-02]-ib,cpu[1-2]",
    "gpu[1-],cpu1",
    "gpu[1--2]",
    "gpu[٣]",
    "gpu[1,,2]",
    "gpu[]",
    "a,,gpu[1]",
    "gpu[1-2], cpu01",
    "gpu[1]]",
    "x(1)[1-2]",
    "gpu[1",
    "gpu[1-2],rack[1-2]x[3]",
}


def test_scattered_numbers_met_again_come_from_the_table():
    caches = ReferenceCaches()
    first = parse._quick_hostlist("gpu[0003,0001]", caches)
    assert first == ("gpu0003", "gpu0001") and caches.by_digits["gpu"] == {"0003": "gpu0003", "0001": "gpu0001"}
    again = parse._quick_hostlist("gpu[0001,0003,0002]", caches)
    assert again == ("gpu0001", "gpu0003", "gpu0002") and again[0] is first[1]
    assert parse._quick_hostlist("gpu[0001,x]", caches) is None and "x" not in caches.by_digits["gpu"]


def test_hostlist_names_are_shared_strings():
    caches = ReferenceCaches()
    one = parse.expand_hostlist("gpu[0001-0004]", caches)
    two = parse.expand_hostlist("gpu[0003,0004]", caches)
    assert one[2] is two[0] and one[3] is two[1]
    assert parse.expand_hostlist("".join(["gpu", "0003"]), caches)[0] is one[2]
    assert parse.expand_hostlist("gpu[0003-0004]")[0] is one[2]  # with no caches: interned all the same


def test_captured_text_gives_the_same_jobs_after_the_caches_are_warm():
    text = (TEST_DATA / "slurm" / "squeue.txt").read_text()
    caches = ReferenceCaches()
    cold = parse.build_jobs(parse_squeue_text(text, caches), "c", caches)
    raws = parse_squeue_text(text, caches)
    assert cold == parse.build_jobs(raws, "c", caches)
    plain = [j for j in cold if not j.parent and j.raw_state != "ARRAY"]
    assert plain == [parse.to_job(r, "c") for r in raws if not r.array_job_id]


def test_the_collector_is_restored_after_a_parse_and_after_an_exception_in_one():
    caches = ReferenceCaches()
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    parse_squeue_text("\n".join(ODD_ROWS), caches)
    assert gc.isenabled()
    if not frozen:
        assert gc.get_freeze_count() == 0  # nothing left frozen where nothing was
    with pytest.raises(parse.AmbiguousRows):
        parse_squeue_text(ODD_ROWS[0] + "\nsecond line of a name\n", caches)
    assert gc.isenabled()
    with pytest.raises(AttributeError):
        parse.build_jobs([object()], "c", caches)  # type: ignore[list-item]
    assert gc.isenabled()
    gc.disable()
    try:
        parse.build_jobs(parse_squeue_text("\n".join(ODD_ROWS), caches), "c", caches)
        assert not gc.isenabled()  # one turned off by someone else (the app at startup) stays off
    finally:
        gc.enable()


def test_inside_a_parse_no_collection_runs():
    seen = []
    gc.callbacks.append(lambda phase, info: seen.append(phase))
    try:
        lines = [row(job_id=str(i), nodes=f"gpu[{i:04d}-{i + 3:04d}]", state="RUNNING") for i in range(1, 3000)]
        caches = ReferenceCaches()
        parse.build_jobs(parse_squeue_text("\n".join(lines), caches), "c", caches)
        assert seen == []
    finally:
        gc.callbacks.pop()


def test_objects_frozen_by_the_app_stay_frozen_and_what_a_parse_makes_joins_them():
    keep = [[] for _ in range(100)]
    caches = ReferenceCaches()
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        raws = parse_squeue_text("\n".join(ODD_ROWS), caches)
        assert gc.get_freeze_count() >= before + len(raws)
    finally:
        gc.unfreeze()
    assert keep


def test_a_parse_under_a_heap_the_app_froze_freezes_what_it_made_without_counting_the_frozen(monkeypatch):
    """Counting the frozen objects walks them all (65 ms at a 100,000-job console's 3 million): where
    the app's heap says it froze, a parse's objects join them uncounted."""
    keeper = Heap()
    keep = [[] for _ in range(100)]
    try:
        keeper.settled()
        before = gc.get_freeze_count()
        monkeypatch.setattr(gc, "get_freeze_count", lambda: pytest.fail("the frozen objects were counted"))
        jobs = parse.squeue_jobs("\n".join(ODD_ROWS), "c", ReferenceCaches())
        monkeypatch.undo()
        assert gc.get_freeze_count() >= before + len(jobs) and gc.isenabled()
    finally:
        keeper.release()
    assert keep and not speed.frozen()


def test_maker_builds_what_the_constructor_builds():
    rng = random.Random(3)
    for _ in range(50):
        args = (str(rng.randint(1, 9)), "".join(["h", "pc"]), "n", "".join(["u", "1"]), rng.choice(list(JobState)))
        made, built = (
            maker(Job)(*args, nodes=("g1",), kind=JobKind.SLURM),
            Job(*args, nodes=("g1",), kind=JobKind.SLURM),
        )
        assert type(made) is Job and made == built and hash(made) == hash(built) and repr(made) == repr(built)
        assert made.cluster is built.cluster and made.user is built.user  # interned as by __init__
    with pytest.raises(AttributeError):
        made.name = "x"  # type: ignore[misc]
    assert maker(Node)("c", "n1", "idle", gpus=(maker(Gpu)(0, GpuState.FREE),)) == Node(
        "c", "n1", "idle", gpus=(Gpu(0, GpuState.FREE),)
    )
    assert maker(LogLine)("1", "x") == LogLine("1", "x")
    given = "".join(["u", "2"])
    as_given = maker(Job, interned=False)("1", "c", "n", given, JobState.RUNNING, nodes=("g1",))
    assert as_given == Job("1", "c", "n", "u2", JobState.RUNNING, nodes=("g1",)) and type(as_given) is Job
    assert as_given.user is given  # stored as given, not interned again
    with pytest.raises(TypeError):
        maker(Job)("1", "c")
    assert maker(parse.Gres) is parse.Gres  # not a quick_init class: its own constructor


# -- squeue_jobs: the text straight to Jobs, as build_jobs(parse_squeue_text(...)) gives them --------


def plain_jobs(text: str, cluster: str) -> list[Job]:
    """The Jobs of the plain path: rows by the dataclass's own constructor, then build_jobs."""
    return parse.build_jobs([plain_raw(line) for line in text.split("\n") if line], cluster, ReferenceCaches())


def test_odd_rows_give_the_jobs_of_the_raw_path_cold_and_warm():
    text = "\n".join(ODD_ROWS) + "\n"
    caches = ReferenceCaches()
    cold = parse.squeue_jobs(text, "c", caches)
    assert cold == plain_jobs(text, "c") == parse.build_jobs(parse_squeue_text(text, caches), "c", caches)
    assert [values(j) for j in cold] == [values(j) for j in plain_jobs(text, "c")]
    warm = parse.squeue_jobs(text, "c", caches)
    assert all(a is b for a, b in zip(warm, cold, strict=True))  # the same Jobs, group heads included
    by_id = {j.id: j for j in cold}
    assert by_id["10"].raw_state == "ARRAY" and by_id["10_0"].parent == "10" and by_id["30"].parent == ""
    assert [j.id for j in cold[:4]] == ["10", "10_0", "10_1", "10_[2-99%4]"]
    assert by_id["10"].start_time == parse._time("1795995100") and by_id["10"].details[-1] == ("Partition", "gpu")
    assert by_id["50"].nodes == ("gpu0012", "gpu0040", "gpu0977", "cpu0003") and by_id["50"].gpus == 2
    assert ("Expected start", parse._local(parse._time("1796000000"), None)) in by_id["30"].details
    assert by_id["57"].details == (("Partition", "gpu"), ("QOS", "normal"), ("Time limit", "UNLIMITED"))


def test_a_changed_line_makes_a_new_job_and_its_array_new_heads_the_rest_stay_the_same_objects():
    caches = ReferenceCaches()
    first = parse.squeue_jobs("\n".join(ODD_ROWS), "c", caches)
    changed = list(ODD_ROWS)
    changed[1] = changed[1].replace("COMPLETING", "COMPLETED").replace("1:00:00", "2:00:00")
    changed[6] = changed[6].replace("PENDING", "RUNNING")
    second = parse.squeue_jobs("\n".join(changed), "c", caches)
    assert second == plain_jobs("\n".join(changed), "c")
    new = {b.id for a, b in zip(first, second, strict=True) if a is not b}
    assert new == {"10", "10_1", "40"}  # the changed lines' Jobs and their array's head
    other = parse.squeue_jobs("\n".join(changed), "other", caches)  # another cluster: its own Jobs
    assert other == plain_jobs("\n".join(changed), "other") and other[5].cluster == "other"
    assert parse.squeue_jobs("\n".join(changed), "c", caches)[5] is second[5]


def test_the_same_lines_under_another_array_order_or_with_tasks_gone_regroup():
    caches = ReferenceCaches()
    rows = [
        row(job_id="11", array_job_id="10", array_task="0", state="RUNNING", nodes="gpu1", start="1795995100"),
        row(job_id="5", name="plain"),
        row(job_id="12", array_job_id="10", array_task="1", state="RUNNING", nodes="gpu2", start="1795995000"),
        row(job_id="10", array_job_id="10", array_task="2-9", display_id="10_[2-9]", start="1795990000"),
    ]
    for text in ("\n".join(rows), "\n".join(rows[1:]), "\n".join(rows[::-1]), "\n".join(rows[:1] + rows[:1])):
        assert parse.squeue_jobs(text, "c", caches) == plain_jobs(text, "c"), text


ROW_VALUES = {
    "job_id": st.sampled_from(["5", "10", "11", "12", "4294967294"]),
    "array_job_id": st.sampled_from(["", "N/A", "0", "10", "11", "20"]),
    "array_task": st.sampled_from(["N/A", "", "(null)", "0", "3", "[3,5]", "2-99%4", "[]", "x"]),
    "state": st.sampled_from(["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED by 0", "PD", "odd", ""]),
    "reason": st.sampled_from(["None", "none", "(null)", "", "Priority", "ReqNodeNotAvail, UnavailableNodes:g[1-2]"]),
    "user": st.sampled_from(["u", "alice", ""]),
    "node_count": st.sampled_from(["1", "2", "N/A", "x"]),
    "nodes": st.sampled_from(["", "gpu[0001-0002]", "gpu0003", "(null)", "a, b", "n[8-11,013,7]", "r[1-2]-n[1-2]"]),
    "tres_per_node": st.sampled_from(["N/A", "(null)", "gres:gpu:a100:2", "gres/gpu:4", "gpu:2", "x"]),
    "submit": st.sampled_from(["N/A", "NONE", "0", "Unknown", "1795995071", "99999999999999999999", "-5", " 7"]),
    "start": st.sampled_from(["N/A", "0", "1796000000", "1795995071", "x"]),
    "end": st.sampled_from(["N/A", "NONE", "1796000000", "1795999999"]),
    "partition": st.sampled_from(["gpu", "", "cpu", "(null)"]),
    "account": st.sampled_from(["(null)", "ml", "none", ""]),
    "qos": st.sampled_from(["(null)", "normal", "None"]),
    "time_limit": st.sampled_from(["1:00:00", "UNLIMITED", ""]),
    "cpus": st.sampled_from(["1", "08", "N/A", "-3", "0", ""]),
    "display_id": st.sampled_from(["5", "10_[2-99%4]", "x"]),
    "name": st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12)
    | st.just(f"a{parse.SEP}b"),
}
ROWS = st.lists(st.fixed_dictionaries(ROW_VALUES).map(lambda values: row(**values)), max_size=10)


@settings(max_examples=300, deadline=None)
@given(ROWS, ROWS, st.integers(0, 10), st.sampled_from(["c", "d"]))
def test_squeue_jobs_gives_what_the_raw_path_gives_poll_after_poll(first, later, kept, cluster):
    """Odd values in every column, arrays split and regrouped, lines repeated, kept or gone between
    two polls: the Jobs equal the plain path's, in the same order."""
    caches = ReferenceCaches()
    for text in ("\n".join(first), "\n".join(first[:kept] + later) + "\n", "\n".join(later + first)):
        assert parse.squeue_jobs(text, cluster, caches) == plain_jobs(text, cluster)


def test_captured_text_gives_the_jobs_of_the_raw_path():
    text = (TEST_DATA / "slurm" / "squeue.txt").read_text()
    caches = ReferenceCaches()
    jobs = parse.squeue_jobs(text, "c", caches)
    assert jobs == plain_jobs(text, "c") and any(j.parent for j in jobs) and any(j.gpus for j in jobs)
    assert jobs == parse.squeue_jobs(text, "c", caches)


def test_squeue_jobs_refuses_an_ambiguous_text_and_restores_the_collector():
    caches = ReferenceCaches()
    with pytest.raises(parse.AmbiguousRows):
        parse.squeue_jobs(ODD_ROWS[0] + "\nsecond line of a name\n", "c", caches)
    with pytest.raises(parse.AmbiguousRows):
        parse.squeue_jobs(row(job_id="x1"), "c", caches)
    assert gc.isenabled()


def test_the_line_caches_hold_the_latest_text_of_each_cluster_and_no_more():
    caches = ReferenceCaches()
    for poll in range(40):
        lines = [row(job_id=str(poll * 1000 + i), name=f"poll {poll}") for i in range(300)]
        lines += [row(job_id="7", array_job_id="7", array_task=str(i), state="RUNNING") for i in range(poll % 3)]
        parse.squeue_jobs("\n".join(lines + lines[:3]), "c", caches)  # lines repeated: kept once
        parse.squeue_jobs("\n".join(lines[:5]), "d", caches)  # another cluster's small queue: its own cache
        kept = [hash(line) for line in lines]  # (each line kept under its hash)
        assert list(caches.lines["c"]) == kept and list(caches.lines["d"]) == kept[:5]
        assert list(caches.arrays["c"]) == (["7"] if poll % 3 else []) and caches.arrays["d"] == {}
    big = [row(job_id=str(i)) for i in range(6000)]
    first = parse.squeue_jobs("\n".join(big), "c", caches)
    assert all(a is b for a, b in zip(first, parse.squeue_jobs("\n".join(big[::-1]), "c", caches)[::-1], strict=True))
    assert len(caches.lines["c"]) == 6000 and parse.squeue_jobs("", "c", caches) == [] and caches.lines["c"] == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.sampled_from("ab\n"), max_size=12), max_size=12), st.integers(1, 20))
def test_a_text_split_a_stretch_at_a_time_gives_the_lines_of_the_whole(parts, stretch):
    text = "\n".join(parts)
    old, parse._STRETCH = parse._STRETCH, stretch
    try:
        lines = list(parse._stretches(text))
    finally:
        parse._STRETCH = old
    assert [line for line in lines if line] == [line for line in text.split("\n") if line]


def test_squeue_jobs_over_stretches_shorter_than_a_line(monkeypatch):
    text = "\n".join(ODD_ROWS) + "\n\n" + ODD_ROWS[0]
    monkeypatch.setattr(parse, "_STRETCH", 7)
    caches = ReferenceCaches()
    assert parse.squeue_jobs(text, "c", caches) == plain_jobs(text, "c")


@pytest.mark.parametrize("text", ["gpu01", " gpu01 ", "(null)", "N/A", " ", "\t", "a,b", "a, b", ",a", "x y", "名前"])
def test_node_lists_without_brackets_expand_as_a_split_on_commas(text):
    caches = ReferenceCaches()
    names = tuple(name for name in (part.strip() for part in text.split(",")) if name and name not in ("(null)", "N/A"))
    assert parse.expand_hostlist(text, caches) == names == parse.expand_hostlist(text)
    assert all(a is b for a, b in zip(parse.expand_hostlist(text, caches), (sys.intern(n) for n in names)))


# -- what a parse says changed since the last one (squeue_answer's QueueDelta) ----------------------


def check_delta(before: list[Job], jobs: list[Job], delta: parse.QueueDelta) -> None:
    """``delta`` is exactly what ``jobs`` differs by from ``before``: the Jobs not given before (by
    identity), and the ids given before and no more; those applied to ``before`` give ``jobs``."""
    was = set(map(id, before))
    assert sorted(map(id, delta.put)) == sorted(id(j) for j in jobs if id(j) not in was)
    assert len({j.id for j in delta.put}) == len(delta.put)
    assert set(delta.gone) == {j.id for j in before} - {j.id for j in jobs} and len(set(delta.gone)) == len(delta.gone)
    by_id = {j.id: j for j in before}
    for job_id in delta.gone:
        del by_id[job_id]
    by_id.update((j.id, j) for j in delta.put)
    assert by_id == {j.id: j for j in jobs} and all(by_id[j.id] is j for j in jobs)


# Lines with ids unique in any one poll: each slot is one job (or an array's task, or its pending
# remainder) in a few versions; a poll takes some slots, each in one version, in any order.
def _slot(n: int, version: int) -> str:
    state = ("PENDING", "RUNNING", "COMPLETING", "COMPLETED")[version % 4]
    nodes = "" if state == "PENDING" else f"gpu[{version:04d}-{version + 1:04d}]"
    start = "N/A" if state == "PENDING" else str(1795995000 + version)
    if n < 12:  # plain jobs
        return row(job_id=str(n + 1), state=state, nodes=nodes, start=start, name=f"job {n} v{version}")
    group = "100" if n < 18 else "200"
    if n in (17, 23):  # the array's pending remainder
        return row(job_id=group, array_job_id=group, array_task=f"{40 + version}-99", display_id=f"{group}_[40-99]")
    return row(job_id=str(1000 + n), array_job_id=group, array_task=str(n), state=state, nodes=nodes, start=start)


POLLS = st.lists(
    st.lists(st.tuples(st.integers(0, 23), st.integers(0, 3)), max_size=24, unique_by=lambda s: s[0]),
    min_size=2,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(POLLS, st.randoms(use_true_random=False))
def test_a_parse_says_exactly_what_changed_since_the_last_one_poll_after_poll(polls, rnd):
    caches = ReferenceCaches()
    before: list[Job] = []
    number = 0
    for poll in polls:
        lines = [_slot(n, version) for n, version in poll]
        rnd.shuffle(lines)
        jobs, delta = parse.squeue_answer("\n".join(lines) + "\n", "c", caches)
        assert jobs == plain_jobs("\n".join(lines), "c")
        assert delta.since == number and delta.number > number
        if number:
            check_delta(before, jobs, delta)
        else:
            assert delta.put == () and delta.gone == ()
        before, number = jobs, delta.number


@settings(max_examples=300, deadline=None)
@given(ROWS, ROWS, st.integers(0, 10))
def test_a_parse_of_odd_rows_says_exactly_what_changed_where_ids_are_unique(first, later, kept):
    caches = ReferenceCaches()
    before = parse.squeue_answer("\n".join(first), "c", caches)[0]
    for text in ("\n".join(first), "\n".join(first[:kept] + later) + "\n", "\n".join(later + first)):
        jobs, delta = parse.squeue_answer(text, "c", caches)
        unique = len({j.id for j in jobs}) == len(jobs) and len({j.id for j in before}) == len(before)
        if delta.since and unique:
            check_delta(before, jobs, delta)
        before = jobs


def test_a_parse_says_nothing_after_a_text_it_refused_a_line_given_twice_or_the_caches_cleared():
    caches = ReferenceCaches()
    lines = [_slot(n, 1) for n in range(24)]
    text = "\n".join(lines)
    assert parse.squeue_answer(text, "c", caches)[1].since == 0  # the first parse: nothing to say
    assert parse.squeue_answer(text, "c", caches)[1].since != 0
    with pytest.raises(parse.AmbiguousRows):
        parse.squeue_answer(text + "\nsecond line of a name\n", "c", caches)
    assert parse.squeue_answer(text, "c", caches)[1].since == 0
    assert parse.squeue_answer(text + "\n" + lines[0], "c", caches)[1].since == 0  # a line twice
    assert parse.squeue_answer(text, "c", caches)[1].since == 0  # (after it too)
    assert parse.squeue_answer(text, "c", caches)[1].since != 0
    assert parse.squeue_answer(text, "d", caches)[1].since == 0  # another cluster: its own
    caches.clear()
    assert parse.squeue_answer(text, "c", caches)[1].since == 0


@settings(max_examples=200, deadline=None)
@given(ROWS, ROWS, st.binary(max_size=6), st.integers(5, 200))
def test_the_bytes_squeue_printed_give_the_jobs_of_its_text_decoded(first, later, junk, stretch):
    """Lines split as bytes and decoded one by one (bad bytes, non-ASCII names) give the Jobs of the
    whole text decoded, poll after poll, stretches of any length; a line met before, its Job again."""
    old, parse._STRETCH = parse._STRETCH, stretch
    try:
        caches = ReferenceCaches()
        bad = b"\xff" + junk.replace(b"\n", b"")  # at the end of each line: in the job's name
        for lines in (first, first + later + [""], later):
            data = b"\n".join(line.encode() + bad if line else b"" for line in lines)
            assert parse.squeue_jobs(data, "c", caches) == plain_jobs(data.decode(errors="replace"), "c")
        data = "\n".join(later).encode()
        again = parse.squeue_jobs(data, "c", caches), parse.squeue_jobs(data, "c", caches)
        assert all(a is b for a, b in zip(*again, strict=True))
        assert parse.squeue_jobs(b"", "c", caches) == [] and parse.squeue_jobs(b"\n\n", "c", caches) == []
    finally:
        parse._STRETCH = old


@settings(max_examples=200, deadline=None)
@given(POLLS, st.randoms(use_true_random=False))
def test_parses_stepped_in_turns_or_closed_midway_give_their_jobs_and_say_exactly_what_changed_or_nothing(polls, rnd):
    """``squeue_steps`` of one cluster driven in any interleaving, some closed midway (a poll cancelled):
    each that ends gives the Jobs of its text, and what it says changed is exact against the parse it
    names; after the last, one parse alone may say nothing, the next one says what changed."""
    old, parse._STRETCH = parse._STRETCH, 200  # (a few lines a step)
    try:
        caches = ReferenceCaches()
        ended: dict[int, list[Job]] = {}  # parse number -> its Jobs
        running: list[tuple[str, object]] = []

        def step(text: str, steps) -> bool:
            try:
                next(steps)
            except StopIteration as end:
                jobs, delta = end.value
                assert jobs == plain_jobs(text, "c")
                if delta.since:
                    check_delta(ended[delta.since], jobs, delta)
                ended[delta.number] = jobs
                return True
            return False

        texts = ["\n".join(rnd.sample([_slot(n, v) for n, v in poll], len(poll))) + "\n" for poll in polls]
        while texts or running:
            move = rnd.random()
            if texts and (not running or move < 0.2):
                text = texts.pop(0)
                running.append((text, parse.squeue_steps(text, "c", caches)))
            elif move < 0.3:
                running.pop(rnd.randrange(len(running)))[1].close()  # type: ignore[attr-defined]
            else:
                i = rnd.randrange(len(running))
                if step(*running[i]):
                    del running[i]
        text = "\n".join(_slot(n, 2) for n in range(24))
        for _ in range(2):
            jobs, delta = parse.squeue_answer(text, "c", caches)
            assert jobs == plain_jobs(text, "c")
            if delta.since:
                check_delta(ended[delta.since], jobs, delta)
            ended[delta.number] = jobs
        assert delta.since and gc.isenabled()
    finally:
        parse._STRETCH = old


def test_details_are_kept_under_interned_words():
    """Each pending job's details are kept under a key of its own (its expected start): the key's
    other words are the interned ones, not the strings split from its line, kept a set per job."""
    caches = ReferenceCaches()
    lines = [row(job_id=str(100 + i), start=str(1796000000 + i), partition="gpu-" + "x" * 3) for i in range(3)]
    jobs = parse.squeue_jobs("\n".join(lines).encode(), "c", caches)
    assert len(caches.text_details) == 3
    for key in caches.text_details:
        assert all(word is sys.intern(word) for word in key[1:])
    assert [dict(job.details)["Partition"] for job in jobs] == ["gpu-xxx"] * 3


def test_the_tasks_of_an_array_share_one_parent_string():
    caches = ReferenceCaches()
    lines = [row(job_id=str(70 + i), array_job_id="69", array_task=str(i), state="RUNNING") for i in range(3)]
    head, *tasks = parse.squeue_jobs("\n".join(lines).encode(), "c", caches)
    assert head.id == "69" and [t.id for t in tasks] == ["69_0", "69_1", "69_2"]
    assert all(t.parent == "69" and t.parent is tasks[0].parent for t in tasks)
