"""The Queue's ``/`` filter language: fields, numbers, negation, quoting, bare words, clear errors."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yanflow_tui.filters import FIELDS, FilterError, JobColumns, JobFields, JobFilter, any_texts, compile_filter
from yanflow_tui.model import Job, JobKind, JobState

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def job(**kw) -> Job:
    base = dict(
        id="7",
        cluster="hpc",
        name="train-resnet",
        user="alice",
        state=JobState.RUNNING,
        raw_state="RUNNING",
        reason="",
        nodes=("gpu01",),
        gpus=4,
        submit_time=T0,
        kind=JobKind.SINGLE,
    )
    base.update(kw)
    return Job(**base)


JOBS = [
    job(),
    job(
        id="8",
        name="my job",
        user="bob",
        state=JobState.PENDING,
        raw_state="PENDING",
        reason="Resources",
        nodes=(),
        gpus=8,
    ),
    job(
        id="9",
        cluster="k8s",
        name="eval",
        user="Carol",
        state=JobState.FAILED,
        raw_state="NODE_FAIL",
        nodes=("gpu02", "gpu03"),
        gpus=0,
        kind=JobKind.MULTI_NODE,
    ),
]


def ids(text: str) -> list[str]:
    f = compile_filter(text)
    return [j.id for j in JOBS if f.matches(j)]


def test_empty_filter_matches_everything():
    assert compile_filter("").empty and compile_filter("   ").empty
    assert ids("") == ["7", "8", "9"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("state:running", ["7"]),
        ("state:run", ["7"]),  # prefix
        ("state:ru", ["7"]),
        ("STATE:PENDING", ["8"]),  # field and value case-insensitive
        ("state:node_fail", ["9"]),  # the cluster's own state too
        ("state:ning", []),  # not a substring match
        ("user:ALICE", ["7"]),
        ("user:o", ["8", "9"]),  # substring
        ("cluster:hpc", ["7", "8"]),
        ("cluster:k8", ["9"]),
        ("id:8", ["8"]),
        ("name:resnet", ["7"]),
        ('name:"my job"', ["8"]),
        ("name:'my job'", ["8"]),
        ("reason:resource", ["8"]),
        ("node:gpu03", ["9"]),
        ("nodes:gpu0", ["7", "9"]),
        ("kind:multi", ["9"]),
        ("kind:single", ["7", "8"]),
    ],
)
def test_text_fields(text, expected):
    assert ids(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("gpus:>4", ["8"]),
        ("gpus:>=4", ["7", "8"]),
        ("gpus:<4", ["9"]),
        ("gpus:<=4", ["7", "9"]),
        ("gpus:=4", ["7"]),
        ("gpus:4", ["7"]),
        ("gpus:!=4", ["8", "9"]),
        ("gpus:>3.5", ["7", "8"]),
        ("gpu:8", ["8"]),
        ("nnodes:2", ["9"]),
        ("nnodes:0", ["8"]),
        ("nnodes:>=1", ["7", "9"]),
    ],
)
def test_numeric_fields_compare_numbers(text, expected):
    assert ids(text) == expected


def test_negation_with_minus_or_bang():
    assert ids("-user:alice") == ["8", "9"]
    assert ids("!user:alice") == ["8", "9"]
    assert ids("-gpus:>4") == ["7", "9"]
    assert ids("-eval") == ["7", "8"]
    assert ids('!name:"my job"') == ["7", "9"]


def test_bare_words_match_any_visible_text_field():
    assert ids("RESNET") == ["7"]  # name
    assert ids("carol") == ["9"]  # user
    assert ids("resources") == ["8"]  # reason
    assert ids("gpu03") == ["9"]  # nodes
    assert ids("pending") == ["8"]  # state
    assert ids("k8s") == ["9"]  # cluster
    assert ids("multi") == []  # the kind is not a column: only kind: finds it
    assert ids('"my job"') == ["8"]


def test_terms_and_together():
    assert ids("state:running user:alice gpus:>2 cluster:hpc") == ["7"]
    assert ids("cluster:hpc -state:run") == ["8"]
    assert ids("gpu0 -user:carol") == ["7"]
    assert ids("cluster:hpc cluster:k8s") == []


@pytest.mark.parametrize(
    "text, words",
    [
        ("colour:red", ["unknown field 'colour'", "cluster", "gpus"]),
        ("gpus:>x", ["gpus", "not a number"]),
        ("gpus:", ["gpus", "needs a value"]),
        ("nnodes:nan", ["not a number"]),
        ('name:"my job', ["unclosed"]),
        ('name:"my"job', ["space after"]),
        ("-", ["needs a term"]),
        ("state:run !", ["needs a term"]),
    ],
)
def test_mistakes_give_a_clear_one_line_message(text, words):
    with pytest.raises(FilterError) as caught:
        compile_filter(text)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_filter_runs_on_precomputed_fields_too():
    f = compile_filter("user:bob gpus:8")
    fields = [JobFields(j) for j in JOBS]
    assert [f(x) for x in fields] == [False, True, False]


def test_every_field_is_documented_in_the_unknown_field_message():
    with pytest.raises(FilterError) as caught:
        compile_filter("nope:1")
    assert all(field in str(caught.value) for field in FIELDS)


TOKENS = st.sampled_from(list("abcdgnpstu:<>=!-\"' 0123456789.\té") + ["gpus:", "state:", "user:", "nnodes:", "name:"])


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=20).map("".join) | st.text(max_size=40))
def test_parsing_never_raises_anything_but_filter_error(text):
    try:
        f = compile_filter(text)
    except FilterError as exc:
        assert str(exc)
        return
    for j in JOBS:  # and a compiled filter never raises on a job
        assert f.matches(j) in (True, False)


def test_narrows_holds_only_where_every_match_of_the_new_filter_matched_the_old_one():
    def narrows(new: str, old: str) -> bool:
        return compile_filter(new).narrows(compile_filter(old))

    assert narrows("erin", "er") and narrows("er", "") and narrows("erin", "erin")
    assert narrows("name:train", "name:rai") and narrows("state:runn", "state:r")
    assert narrows("alice state:run", "alice") and narrows("alice -bob", "alice")
    assert not narrows("er", "erin")  # shorter: wider
    assert not narrows("-erin", "-er")  # a negated word typed on matches more
    assert not narrows("gpus:>40", "gpus:>4") and not narrows("state:ru", "state:u")
    assert not narrows("name:erin", "erin") and not narrows("alice", "alice bob")


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=12).map("".join), st.lists(TOKENS, max_size=6).map("".join))
def test_a_filter_that_narrows_another_never_matches_a_job_the_other_does_not(old_text, typed):
    try:
        old, new = compile_filter(old_text), compile_filter(old_text + typed)
    except FilterError:
        return
    if new.narrows(old):
        for j in JOBS:
            assert not new.matches(j) or old.matches(j), (old_text, typed, j.id)


WORDS = ["Train", "resnet", "ALICE", "bob", "gpu01", "ΣΑΣ", "İx", "a b", "", "hpc", "run", "PD", "x-1"]
RANDOM_JOBS = st.builds(
    job,
    id=st.sampled_from(["1", "12_3", "A7", "ß"]),
    cluster=st.sampled_from(["hpc", "HPC-2", "Σλ"]),
    name=st.sampled_from(WORDS) | st.text(max_size=8),
    user=st.sampled_from(WORDS),
    state=st.sampled_from(list(JobState)),
    raw_state=st.sampled_from(["RUNNING", "PENDING", "Completed", "NODE_FAIL"]),
    reason=st.sampled_from(WORDS),
    nodes=st.lists(st.sampled_from(["gpu01", "GPU02", "cpu1", "nΣ"]), max_size=3).map(tuple),
    gpus=st.integers(0, 16),
    kind=st.sampled_from(list(JobKind)),
)
FILTER_TERMS = st.sampled_from(
    [
        "e",
        "E",
        "σ",
        "ας",
        "i̇",
        "a b",
        "hpc",
        "1",
        "-run",
        "!gpu",
        "state:r",
        "state:pd",
        "-state:run",
        "user:ALI",
        "name:'a b'",
        "gpus:>4",
        "gpus:<=2",
        "-gpus:4",
        "nnodes:2",
        "nnodes:>=1",
        "node:gpu0",
        "kind:multi",
        "id:_",
        "reason:x",
        "cluster:-2",
        "-cluster:hpc",
        "gpu:!=0",
        "nodes:cpu",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(RANDOM_JOBS, max_size=25), st.lists(FILTER_TERMS, max_size=4).map(" ".join), st.data())
def test_select_over_columns_matches_exactly_what_the_predicate_matches(jobs, text, data):
    f = compile_filter(text)
    expected = [i for i, j in enumerate(jobs) if f.matches(j)]
    assert f.select(JobColumns(jobs)) == expected
    assert f.select(JobColumns(jobs, any_texts(jobs))) == expected
    pool = sorted(data.draw(st.sets(st.integers(0, max(0, len(jobs) - 1)))) & set(range(len(jobs))))
    assert f.select(JobColumns(jobs), pool) == [i for i in pool if i in expected]
    assert any_texts(jobs) == [JobFields(j).any for j in jobs]


def test_select_of_a_filter_made_by_hand_tests_each_jobs_fields():
    hand = JobFilter("bob", (lambda fields: fields.user == "bob",))
    assert hand.select(JobColumns(JOBS)) == [1]
