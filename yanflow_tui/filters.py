"""The Queue's ``/`` filter language, compiled once into a predicate over jobs. Pure: no Textual.

    state:running user:alice gpus:>4 cluster:hpc -reason:"bad node" resnet

Terms AND together. ``field:value`` matches one field: text fields by case-insensitive substring,
``state`` by prefix (``state:run``) of the normalised or the cluster's own state, ``gpus`` and
``nnodes`` by number (``>4 >=4 <4 <=4 =4 4``). A bare word matches any text the table shows.
``-term`` or ``!term`` negates; ``"..."`` or ``'...'`` quotes a value with spaces. Mistakes raise
``FilterError`` with a one-line message, never anything else.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, not_
from sys import intern

from yanflow_tui.model import Job

TEXT_FIELDS = ("cluster", "id", "name", "user", "state", "reason", "node", "kind")
NUMBER_FIELDS = ("gpus", "nnodes")
ALIASES = {"nodes": "node", "gpu": "gpus"}
FIELDS = TEXT_FIELDS + NUMBER_FIELDS
_COMPARE = (">=", "<=", "!=", ">", "<", "=")
_OPS = {">=": operator.ge, "<=": operator.le, "!=": operator.ne, ">": operator.gt, "<": operator.lt, "=": operator.eq}
_FIELD = re.compile(r"([A-Za-z_]+):")


class FilterError(ValueError):
    """A filter that cannot be compiled; ``str()`` is one line for the user."""


class JobFields:
    """A job's searchable text, lower-cased once (cache it per job: matching then costs no copies)."""

    __slots__ = (
        "cluster",
        "id",
        "name",
        "user",
        "state",
        "raw_state",
        "reason",
        "node",
        "kind",
        "gpus",
        "nnodes",
        "any",
    )

    def __init__(self, job: Job) -> None:
        # the words many jobs share (cluster, user, states, reasons) are kept once, not per job
        self.cluster = intern(job.cluster.lower())
        self.id = job.id.lower()
        self.name = job.name.lower()
        self.user = intern(job.user.lower())
        self.state = job.state._value_  # (an attribute: .value is a descriptor, slow over 100k jobs)
        self.raw_state = intern(job.raw_state.lower())
        self.reason = intern(job.reason.lower())
        self.node = intern(" ".join(job.nodes).lower()) if len(job.nodes) == 1 else " ".join(job.nodes).lower()
        self.kind = job.kind._value_
        self.gpus = job.gpus
        self.nnodes = len(job.nodes)
        # what a bare word searches: the columns the queue shows
        self.any = "\n".join((self.cluster, self.id, self.name, self.user, self.state, self.reason, self.node))


Predicate = Callable[[JobFields], bool]

_GET = {name: attrgetter(name) for name in ("cluster", "id", "name", "user", "raw_state", "reason", "nodes", "gpus")}
_STATE_VALUE = attrgetter("state._value_")
_KIND_VALUE = attrgetter("kind._value_")


def any_texts(jobs: Iterable[Job]) -> list[str]:
    """What a bare word searches in each job: ``JobFields.any``, for many jobs at once (in C: lowering
    the joined text is lowering each part, the parts being split by a newline)."""
    get, jobs = _GET, list(jobs)
    parts = (
        map(get["cluster"], jobs),
        map(get["id"], jobs),
        map(get["name"], jobs),
        map(get["user"], jobs),
        map(_STATE_VALUE, jobs),
        map(get["reason"], jobs),
        map(" ".join, map(get["nodes"], jobs)),
    )
    return list(map(str.lower, map("\n".join, zip(*parts))))


def _lowered(values: Iterable[str]) -> list[str]:
    """``values`` lower-cased, each distinct one once (the words many jobs share are kept once)."""
    values = list(values)
    low = {value: intern(value.lower()) for value in set(values)}
    return list(map(low.__getitem__, values))


_COLUMN: dict[str, Callable[[Collection[Job]], list]] = {
    "cluster": lambda jobs: _lowered(map(_GET["cluster"], jobs)),
    "id": lambda jobs: list(map(str.lower, map(_GET["id"], jobs))),
    "name": lambda jobs: list(map(str.lower, map(_GET["name"], jobs))),
    "user": lambda jobs: _lowered(map(_GET["user"], jobs)),
    "state": lambda jobs: list(map(_STATE_VALUE, jobs)),
    "raw_state": lambda jobs: _lowered(map(_GET["raw_state"], jobs)),
    "reason": lambda jobs: _lowered(map(_GET["reason"], jobs)),
    "node": lambda jobs: list(map(str.lower, map(" ".join, map(_GET["nodes"], jobs)))),
    "kind": lambda jobs: list(map(_KIND_VALUE, jobs)),
    "gpus": lambda jobs: list(map(_GET["gpus"], jobs)),
    "nnodes": lambda jobs: list(map(len, map(_GET["nodes"], jobs))),
    "": any_texts,
}


class JobColumns:
    """The filter's fields of many jobs, a list per field (``""``: what a bare word searches), each
    made in one pass when a filter first needs it: ``JobFilter.select`` then tests a term over every
    job in C. ``texts`` gives the bare-word column where the caller keeps it (per job, across versions)."""

    __slots__ = ("_columns", "jobs")

    def __init__(self, jobs: Collection[Job], texts: list[str] | None = None) -> None:
        self.jobs = jobs
        self._columns: dict[str, list] = {} if texts is None else {"": texts}

    def __len__(self) -> int:
        return len(self.jobs)

    def __getitem__(self, name: str) -> list:
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = _COLUMN[name](self.jobs)
        return column


@dataclass(frozen=True)
class JobFilter:
    """A compiled filter: call it (or, in a hot loop, its ``predicate``) with a job's ``JobFields``;
    ``matches`` takes a ``Job``."""

    text: str
    predicates: tuple[Predicate, ...] = ()
    predicate: Predicate = field(init=False, repr=False, compare=False)  # all of them, as one function
    terms: tuple[tuple[bool, str, str], ...] = field(default=(), compare=False)  # (negated, field, value)

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicate", _all(self.predicates))

    def __call__(self, fields: JobFields) -> bool:
        return self.predicate(fields)

    def matches(self, job: Job) -> bool:
        return self(JobFields(job))

    def select(self, columns: JobColumns, pool: Sequence[int] | None = None) -> list[int]:
        """The indices (in ``pool``, or all of ``columns``) of the jobs this filter matches, in order:
        what testing ``self`` on each job's ``JobFields`` gives, a term at a time over the columns."""
        chosen: Sequence[int] = range(len(columns)) if pool is None else pool
        if len(self.terms) != len(self.predicates):  # (made by hand, not compiled: each job's fields)
            jobs = list(columns.jobs)
            fields = [JobFields(jobs[i]) for i in chosen]
            return list(compress(chosen, map(self.predicate, fields)))
        every = pool is None
        for negate, fld, value in self.terms:
            if fld == "state":
                needle = value.lower()
                states, raws = columns["state"], columns["raw_state"]
                if not every:
                    states, raws = list(map(states.__getitem__, chosen)), list(map(raws.__getitem__, chosen))
                hits = map(
                    operator.or_, map(str.startswith, states, repeat(needle)), map(str.startswith, raws, repeat(needle))
                )
            elif fld in NUMBER_FIELDS:
                op, limit = _comparison(fld, value)
                numbers = columns[fld]
                hits = map(op, numbers if every else map(numbers.__getitem__, chosen), repeat(limit))
            else:
                texts = columns[fld]
                hits = map(str.__contains__, texts if every else map(texts.__getitem__, chosen), repeat(value.lower()))
            chosen = list(compress(chosen, map(not_, hits) if negate else hits))
            every = False
        return list(chosen)

    @property
    def empty(self) -> bool:
        return not self.predicates

    def narrows(self, other: JobFilter) -> bool:
        """Whether every job this filter matches also matches ``other``, as when a word is typed
        on (``er`` -> ``erin``) or a term is added: then only ``other``'s matches need testing. Each
        of ``other``'s terms must be implied by the term in the same place here: the same term, or
        a positive text term of the same field whose value contains it (``state``: starts with it)."""
        if len(self.terms) < len(other.terms) or (other.predicates and not other.terms):
            return False
        for (neg, fld, value), (was_neg, was_fld, was_value) in zip(self.terms, other.terms):
            if (neg, fld, value) == (was_neg, was_fld, was_value):
                continue
            if neg or was_neg or fld != was_fld or fld in NUMBER_FIELDS:
                return False
            low, was_low = value.lower(), was_value.lower()
            if not (low.startswith(was_low) if fld == "state" else was_low in low):
                return False
        return True


def compile_filter(text: str) -> JobFilter:
    """Compile ``text``; raises ``FilterError`` (only) when it is not a valid filter."""
    terms = tuple(_tokens(text))
    return JobFilter(text, tuple(_term(negate, field, value) for negate, field, value in terms), terms)


def _tokens(text: str) -> Iterator[tuple[bool, str, str]]:
    """Yield (negated, field or "", value) for each term."""
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        negate = text[i] in "-!"
        if negate:
            i += 1
        field = ""
        match = _FIELD.match(text, i)
        if match:
            field = match.group(1).lower()
            i = match.end()
        if i < n and text[i] in "\"'":
            quote = text[i]
            end = text.find(quote, i + 1)
            if end < 0:
                raise FilterError(f"unclosed {quote} in {text[start:].strip()!r}")
            value = text[i + 1 : end]
            i = end + 1
            if i < n and not text[i].isspace():
                raise FilterError(f"put a space after the closing {quote}")
        else:
            end = i
            while end < n and not text[end].isspace():
                end += 1
            value, i = text[i:end], end
        if not field and not value:
            raise FilterError(f"{text[start]!r} needs a term after it, e.g. -state:failed")
        if field:
            field = ALIASES.get(field, field)
            if field not in FIELDS:
                raise FilterError(f"unknown field {field!r}; fields: {', '.join(FIELDS)}")
            if not value:
                raise FilterError(f"{field}: needs a value")
        yield negate, field, value


def _term(negate: bool, field: str, value: str) -> Predicate:
    predicate = _number(field, value) if field in NUMBER_FIELDS else _text(field, value.lower())
    if not negate:
        return predicate

    def negated(fields: JobFields) -> bool:
        return not predicate(fields)

    return negated


def _all(predicates: tuple[Predicate, ...]) -> Predicate:
    """One function for the AND of ``predicates`` (unrolled for the usual few terms: it runs per job)."""
    if not predicates:
        return lambda f: True
    if len(predicates) == 1:
        return predicates[0]
    if len(predicates) == 2:
        a, b = predicates
        return lambda f: a(f) and b(f)
    first, rest = predicates[0], _all(predicates[1:])
    return lambda f: first(f) and rest(f)


_TEXT: dict[str, Callable[[str], Predicate]] = {
    "": lambda needle: lambda f: needle in f.any,
    "cluster": lambda needle: lambda f: needle in f.cluster,
    "id": lambda needle: lambda f: needle in f.id,
    "name": lambda needle: lambda f: needle in f.name,
    "user": lambda needle: lambda f: needle in f.user,
    "state": lambda needle: lambda f: f.state.startswith(needle) or f.raw_state.startswith(needle),
    "reason": lambda needle: lambda f: needle in f.reason,
    "node": lambda needle: lambda f: needle in f.node,
    "kind": lambda needle: lambda f: needle in f.kind,
}


def _text(field: str, needle: str) -> Predicate:
    return _TEXT[field](needle)


def _number(field: str, value: str) -> Predicate:
    op, limit = _comparison(field, value)
    attr = operator.attrgetter(field)
    return lambda f: op(attr(f), limit)


def _comparison(field: str, value: str) -> tuple[Callable[[float, float], bool], float]:
    op_text = next((op for op in _COMPARE if value.startswith(op)), "=")
    number = value[len(op_text) :] if value.startswith(op_text) else value
    try:
        limit = float(number.strip())
    except ValueError:
        raise FilterError(f"{field}: {value!r} is not a number; try {field}:>4 or {field}:2") from None
    if limit != limit:  # NaN compares false with everything: almost certainly a typo
        raise FilterError(f"{field}: {value!r} is not a number")
    return _OPS[op_text], limit
