"""The first paint from the cached snapshot, before the backends and Textual are imported (most of a
second of CPU on a small machine).

When the last run's snapshot (``snapcache.read``, the plain document, before its jobs are made) has
a configured cluster and stdout is a terminal, ``paint`` draws the Queue as the console first shows
it: the header with each cluster marked ``cached <age>`` (the others ``connecting``), the column
headers and the first screenful of rows, in the default order with groups closed, "mine" as the last
run had it (the file keeps each cluster's user), in plain ANSI on the alternate screen. Textual then
takes over that same screen (``takes_over``, ``app.takeover_driver``: the terminal's modes are
handed back as they were before the paint, and the alternate screen is not entered twice) and
repaints it whole. Keys typed meanwhile are read for the console (``earlykeys``), and ``/`` and a
filter typed into it are drawn at once in the last line (``earlyecho``). Anything that ends the
process first (an error, ^C, a signal) or writes to the terminal (a login in the terminal:
``stream``) calls ``leave``: the normal screen, the cursor and the terminal's modes come back as
they were. Nothing is painted when there is no usable snapshot, stdin or stdout is not a terminal,
``TERM`` is unset or ``dumb``, ``YANFLOW_NO_EARLY_PAINT`` is set, or the terminal is smaller than
20x4. Cluster text is cleaned of control characters (``sanitize.clean``). No Textual or Rich here;
the columns and state styles are ``queuecolumns``' (as the Queue's), the cells follow
``screens/render/rows.py`` and the column fitting ``VirtualTable``.
"""

from __future__ import annotations

import os
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, TextIO, cast

from yanflow_tui import queuecolumns
from yanflow_tui.earlykeys import KeyReader
from yanflow_tui.sanitize import clean
from yanflow_tui.widths import duration
from yanflow_tui.widths import fit_widths as widths_fit

if TYPE_CHECKING:
    from yanflow_tui.config import Config
    from yanflow_tui.model import ClusterConfig

DISABLE_ENV = "YANFLOW_NO_EARLY_PAINT"
MIN_COLUMNS, MIN_LINES = 20, 4

# The default dark theme's colours, as Textual draws the Queue (textual-dark); another theme gets
# the attributes only (bold, dim, reverse) on the terminal's own colours.
PANEL, SURFACE, STRIPE, CURSOR = "242f38", "1e1e1e", "171717", "0178d4"
FOREGROUND, CURSOR_FG = "e0e0e0", "ddedf9"
COLOURS = {
    "yellow": "fd971f",
    "green": "98e024",
    "cyan": "58d1eb",
    "red": "f4005f",
    "magenta": "9d65ff",
}
HEALTH_COLOUR = {"connecting": "yellow", "ok": "green", "stale": "yellow", "error": "red"}
GROUP_CLOSED = "▸ "
PAD = 1


def style_words(style: str) -> tuple[str, bool, bool]:
    """A ``queuecolumns`` style ("bold red", "dim"...) as (colour or "", bold, dim)."""
    words = style.split()
    colours = [word for word in words if word not in ("bold", "dim")]
    return (colours[-1] if colours else "", "bold" in words, "dim" in words)


# The Queue's columns (``queuecolumns``), by index: headers; flexible ones and their floors; give-way
# ranks; right-justified ones; min widths; and each one's style (colour, bold, dim) under its cells.
COLUMNS = queuecolumns.COLUMNS
HEADERS = queuecolumns.HEADERS
FLEX = {i: column.floor for i, column in enumerate(COLUMNS) if column.flex}
GIVE_WAY = {i: column.give_way for i, column in enumerate(COLUMNS) if column.give_way}
RIGHT = {i for i, column in enumerate(COLUMNS) if column.justify == "right"}
MIN_WIDTH = {i: column.min_width for i, column in enumerate(COLUMNS) if column.min_width}
COLUMN_STYLE = {i: style_words(column.style) for i, column in enumerate(COLUMNS) if column.style}
STATE_STYLE = {state: style_words(style) for state, style in queuecolumns.STATE_STYLES.items()}
STATE, AGE = queuecolumns.KEYS.index("state"), queuecolumns.KEYS.index("age")  # coloured by state; live


# -- whether to paint --------------------------------------------------------------------------------
def wanted(environ: dict[str, str] | None = None) -> bool:
    """A real terminal that can take ANSI, and not switched off."""
    env = os.environ if environ is None else environ
    if os.name != "posix" or env.get(DISABLE_ENV) or env.get("TERM", "") in ("", "dumb"):
        return False  # (elsewhere Textual's driver is not the one ``app.takeover_driver`` extends)
    try:
        return os.isatty(sys.stdout.fileno()) and os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):  # replaced streams (tests), closed ones
        return False


# -- text helpers ------------------------------------------------------------------------------------
def cells(text: str) -> int:
    """Terminal cells ``text`` takes (East Asian wide characters two, combining marks none)."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, with an ellipsis where it was cut (as Rich's ``truncate``)."""
    if cells(text) <= width:
        return text
    if width <= 0:
        return ""
    out, used = [], 0
    for ch in text:
        w = cells(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


_DIGITS = re.compile(r"(\d+)")


def _number_text(digits: str) -> str:
    number = str(int(digits))
    return f"\x01{len(number):03d}{number}"


def natural_text(value: str) -> str:
    """The Queue's natural order of ids (``screens.render.rows.natural_text``)."""
    if value.isdigit() and value.isascii():
        return _number_text(value)
    return "".join(_number_text(p) if p.isdecimal() else f"\x02{p}\x00" for p in _DIGITS.split(value) if p)


# -- styles ------------------------------------------------------------------------------------------
class Style:
    """SGR sequences for one theme: the dark theme's colours in truecolor or 256 colours, or none."""

    def __init__(self, colours: str) -> None:
        self.colours = colours  # "truecolor", "256" or "" (attributes only)

    def _rgb(self, hexa: str, ground: int) -> str:
        r, g, b = (int(hexa[i : i + 2], 16) for i in (0, 2, 4))
        if self.colours == "truecolor":
            return f"{ground};2;{r};{g};{b}"
        if max(r, g, b) - min(r, g, b) < 12:  # a grey: the 24-step ramp
            index = 232 + min(23, max(0, round((r - 8) / 10)))
        else:
            index = 16 + 36 * round(r / 255 * 5) + 6 * round(g / 255 * 5) + round(b / 255 * 5)
        return f"{ground};5;{index}"

    def sgr(self, fg: str = "", bg: str = "", bold: bool = False, dim: bool = False, reverse: bool = False) -> str:
        parts = ["0"]
        if bold:
            parts.append("1")
        if dim:
            parts.append("2")
        if reverse:
            parts.append("7")
        if self.colours:
            fg = COLOURS.get(fg, fg)
            if fg:
                parts.append(self._rgb(fg, 38))
            if bg:
                parts.append(self._rgb(bg, 48))
        return f"\x1b[{';'.join(parts)}m"


def colour_system(environ: dict[str, str], theme: str | None) -> str:
    if theme not in (None, "", "textual-dark"):
        return ""
    if environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "truecolor"
    return "256" if "256" in environ.get("TERM", "") else ""


# -- what is shown -----------------------------------------------------------------------------------
MAX_ROWS = 500  # rows per cluster and view kept for the paint (more than any screen holds)
ROW_FIELDS = tuple(dict.fromkeys(column.field for column in COLUMNS))
# A cell's text (before ``clean``) where a column shows more than its field's text, from a digest's
# job and how many members its closed group has (``rows.job_live_cells``' rules); a column not here
# shows its field's text. The age (``AGE``) is drawn from the time of the paint (``_age``).
TEXTS: dict[str, Callable[[dict, int], str]] = {
    "id": lambda job, members: GROUP_CLOSED + job["id"] if members else job["id"],
    "name": lambda job, members: f"{job['name']} ({members})" if members else job["name"],
    "gpus": lambda job, members: str(job["gpus"]) if job["gpus"] else "-",
    "nodes": lambda job, members: clean(",".join(job["nodes"])) or "-",
}


def digest(doc: dict) -> dict:
    """What the paint needs of a snapshot document (``snapcache.encode``'s), worked out at exit so
    that the start reads a few kilobytes, not every job: per cluster its kind, age and job count, and
    per view ("all" users; "mine", None when it is the same) the Queue's row count, counts by state,
    widest cell per column and first ``MAX_ROWS`` rows (groups closed, in the default order)."""
    clusters = {}
    for name, entry in doc["clusters"].items():
        jobs, user = entry["jobs"], str(entry.get("user") or "")
        views: dict[str, dict | None] = {}
        for view, me in (("all", ""), ("mine", user)):
            if view == "mine" and not me:
                views[view] = None
                continue
            rows = top_jobs(jobs, me)
            views[view] = {
                "shown": len(rows),
                "counts": dict(Counter(map(str, map(itemgetter("state"), map(itemgetter(0), rows))))),
                "widths": content_widths(rows),
                "rows": [[{k: job[k] for k in ROW_FIELDS}, n] for job, n in rows[:MAX_ROWS]],
            }
        clusters[str(name)] = {"kind": entry["kind"], "updated": entry["updated"], "total": len(jobs), "views": views}
    return {"clusters": clusters}


class Shown:
    """One configured cluster as the console's first frame shows it, with the digest's entry for it
    (``snapcache.seed``'s rule: the same name and kind) or None (it shows ``connecting``)."""

    def __init__(self, cluster: ClusterConfig, entry: dict | None, all_users: bool) -> None:
        self.name, self.kind, self.read_only = cluster.name, cluster.kind, cluster.read_only
        self.entry = entry
        views = entry["views"] if entry is not None else {}
        view = views.get("all") if all_users or views.get("mine") is None else views["mine"]
        self.view: dict = view or {"shown": 0, "counts": {}, "widths": [0] * len(HEADERS), "rows": []}
        self.total = int(entry["total"]) if entry is not None else 0

    def short_state(self, now: float) -> str:
        """As ``screens.render.cluster_rows.short_state`` for a cluster not refreshed yet."""
        if self.entry is not None:
            return f"cached {duration(max(0.0, now - float(self.entry['updated'])))}"
        return "connecting"


def shown_clusters(config: Config, digested: dict) -> list[Shown]:
    """Every configured cluster, in the config's order (the hub's), with its cached entry where it has one."""
    entries = digested.get("clusters") or {}
    out = []
    for cluster in config.clusters:
        entry = entries.get(cluster.name)
        usable = isinstance(entry, dict) and entry.get("kind") == cluster.kind
        out.append(Shown(cluster, entry if usable else None, config.all_users))
    return out


def top_jobs(jobs: list[dict], me: str) -> list[tuple[dict, int]]:
    """One cluster's Queue rows with every group closed: (job, members) in the default order (id
    naturally), ``me``'s jobs only where set."""
    if me:
        jobs = [job for job in jobs if job["user"] == me]
    ids = {job["id"] for job in jobs}
    members: Counter[str] = Counter()
    top = []
    for job in jobs:
        parent = job["parent"]
        if parent and parent != job["id"] and parent in ids:
            members[parent] += job.get("tasks", 1)  # a pending array remainder: several tasks
        else:
            top.append(job)
    ids_text = "".join(map(itemgetter("id"), top))
    if ids_text.isdigit() and ids_text.isascii():  # numbers only (Slurm, local): natural order is by value
        numbers = list(map(int, map(itemgetter("id"), top)))
        top = [top[i] for i in sorted(range(len(top)), key=numbers.__getitem__)]
    else:
        top.sort(key=lambda job: natural_text(job["id"]))
    if members:
        return [(job, members.get(job["id"], 0)) for job in top]
    return list(zip(top, repeat(0)))


def _age(submitted: str | None, now: float) -> str:
    if not submitted:
        return "-"
    from datetime import datetime

    return duration(now - datetime.fromisoformat(submitted).timestamp())


def row_cells(job: dict, members: int, now: float) -> tuple[str, ...]:
    """One row's texts (``screens.render.rows.job_live_cells``)."""
    return tuple(
        _age(job[column.field], now)
        if i == AGE
        else clean(TEXTS[column.key](job, members) if column.key in TEXTS else str(job[column.field]))
        for i, column in enumerate(COLUMNS)
    )


def content_widths(rows: list[tuple[dict, int]]) -> list[int]:
    """The widest cell of each column over every row (as the table measures them all; AGE is
    measured as drawn, so 0 here)."""
    widths = [0] * len(HEADERS)
    jobs = [job for job, _ in rows]
    for i, column in enumerate(COLUMNS):
        if i == AGE:
            continue
        make = TEXTS.get(column.key)
        if make is None:
            texts = set(map(str, map(itemgetter(column.field), jobs)))
        else:
            texts = {make(job, n) for job, n in rows}
        joined = "".join(texts)
        if joined.isascii() and joined.isprintable():  # the usual case: a cell is as wide as it is long
            widths[i] = max(map(len, texts), default=0)
        else:
            widths[i] = max((cells(clean(text)) for text in texts), default=0)
    return widths


def fit_widths(natural: list[int], available: int) -> tuple[list[int], frozenset[int]]:
    """``VirtualTable._fit_widths`` for the Queue's columns (the same ``widths.fit_widths``)."""
    floors = {i: max(floor, cells(HEADERS[i]), MIN_WIDTH.get(i, 0), 3) for i, floor in FLEX.items()}
    return widths_fit(natural, floors, ((rank, i) for i, rank in GIVE_WAY.items()), available, PAD)


Span = tuple[str, str]  # (text, its SGR)


def _line(spans: Sequence[Span], width: int, fill: str) -> str:
    """Spans cut to ``width`` cells (an ellipsis at the cut), the rest filled in ``fill``'s style."""
    out, used = [], 0
    for text, sgr in spans:
        if used >= width:
            break
        w = cells(text)
        if used + w > width:
            text = fit(text + "…", width - used)  # room left: cut, and say so
            w = cells(text)
        out.append(sgr + text)
        used += w
    if used < width:
        out.append(fill + " " * (width - used))
    return "".join(out)


def header_lines(
    config: Config, clusters: list[Shown], style: Style, now: float, width: int, shown: int, total: int, counts: Counter
) -> list[str]:
    """The header bar (``ClusterBar`` on the Queue), packed into ``width`` columns like it. Every
    cluster is as the hub starts it: connecting (yellow), with no message yet."""
    bg = PANEL
    read_only = config.read_only or all(c.read_only for c in config.clusters)
    head: list[Span] = [("YanFlow · Queue", style.sgr(FOREGROUND, bg, bold=True))]
    if read_only:
        head.append(("  ", style.sgr(FOREGROUND, bg, bold=True)))
        head.append(("READ-ONLY ", style.sgr("red", bg, bold=True, reverse=True)))
    head.append(("  all users" if config.all_users else "  mine", style.sgr("cyan", bg, bold=True)))
    parts: list[list[Span]] = []
    colour = HEALTH_COLOUR["connecting"]
    for cluster in clusters:
        part: list[Span] = [
            ("● ", style.sgr(colour, bg, bold=True)),
            (clean(cluster.name), style.sgr(colour, bg, bold=True)),
            (f" {cluster.short_state(now)}", style.sgr(colour, bg, bold=True)),
        ]
        if cluster.read_only and not read_only:
            part.append((" ro", style.sgr("red", bg, bold=True)))
        parts.append(part)
    plain = style.sgr(FOREGROUND, bg)
    tail: list[Span] = [(f"shown {shown} of {total}", plain)]
    for i, (state_name, n) in enumerate(sorted(counts.items())):
        tail.append((": " if i == 0 else " · ", style.sgr(FOREGROUND, bg, dim=True)))
        colour, bold, dim = STATE_STYLE.get(state_name, ("", False, False))
        tail.append((clean(f"{state_name} {n}"), style.sgr(colour or FOREGROUND, bg, bold=bold, dim=dim)))
    room = max(1, width - 2)  # padding 0 1
    lines: list[list[Span]] = [head]

    def length(spans: list[Span]) -> int:
        return sum(cells(text) for text, _ in spans)

    for part in parts:
        if length(lines[-1]) and length(lines[-1]) + 2 + length(part) > room:
            lines.append([])
        if length(lines[-1]):
            lines[-1].append(("  ", plain))
        lines[-1].extend(part)
    if length(lines[-1]) + 4 + min(length(tail), 12) > room:
        lines.append([])
    if length(lines[-1]):
        lines[-1].append(("  │ ", plain))
    lines[-1].extend(tail)
    pad = style.sgr(FOREGROUND, bg)
    return [pad + " " + _line(spans, room, pad) + pad + " " * (width - 1 - room) for spans in lines]


def frame(config: Config, digested: dict, columns: int, lines: int, style: Style, now: float) -> list[str]:
    """The screen's lines, each exactly ``columns`` cells wide, from a ``digest``."""
    clusters = shown_clusters(config, digested)
    ordered = sorted(clusters, key=lambda c: c.name)  # the Queue's order: by cluster name, then id
    shown_count = sum(int(c.view["shown"]) for c in ordered)
    total = sum(c.total for c in ordered)
    counts: Counter[str] = Counter()
    for c in ordered:
        counts.update({str(k): int(v) for k, v in c.view["counts"].items()})
    out = header_lines(config, clusters, style, now, columns, shown_count, total, counts)
    body = max(0, lines - len(out) - 2)  # the column headers and the footer
    out = out[: max(1, lines - 2)]
    rows = [(job, int(n)) for c in ordered for job, n in c.view["rows"]][:body]
    shown = [row_cells(job, members, now) for job, members in rows]
    scrollbar = 2 if shown_count > body else 0
    available = max(1, columns - scrollbar)
    natural = [max(cells(label), MIN_WIDTH.get(i, 0)) for i, label in enumerate(HEADERS)]
    for c in ordered:
        natural = [max(w, int(v)) for w, v in zip(natural, c.view["widths"])]
    for texts in shown:
        natural[AGE] = max(natural[AGE], cells(texts[AGE]))
    widths, hidden = fit_widths(natural, available)

    def table_line(texts: Sequence[str], base: dict, state: str | None) -> str:
        spans: list[Span] = []
        for i, text in enumerate(texts):
            if i in hidden:
                continue
            width = widths[i]
            text = fit(text, width)
            room = width - cells(text)
            fg, bold, dim = base["fg"], base["bold"], False
            if i in COLUMN_STYLE and state is not None:
                colour, its_bold, dim = COLUMN_STYLE[i]
                fg, bold = colour or fg, bold or its_bold
            if i == STATE and state is not None:
                colour, its_bold, dim = STATE_STYLE.get(state, ("", False, False))
                fg, bold = colour or fg, bold or its_bold
            filler = style.sgr(base["fg"], base["bg"], bold=base["bold"])
            before, after = (" " * room, "") if i in RIGHT else ("", " " * room)
            spans += [
                (" " + before, filler),
                (text, style.sgr(fg, base["bg"], bold=bold, dim=dim)),
                (after + " ", filler),
            ]
        line = "".join(sgr + text for text, sgr in spans)
        used = sum(widths[i] + 2 * PAD for i in range(len(HEADERS)) if i not in hidden)
        fill = style.sgr(base["fg"], base["bg"])
        rest = available - used
        if rest < 0:  # narrower than every column's floor: cut (the table scrolls sideways there)
            return _clip(line, available) + style.sgr("", SURFACE) + " " * scrollbar
        return line + fill + " " * rest + style.sgr("", SURFACE) + " " * scrollbar

    out.append(table_line(HEADERS, {"fg": FOREGROUND, "bg": PANEL, "bold": True}, None))
    for index, texts in enumerate(shown):
        if index == 0:
            base = {"fg": CURSOR_FG, "bg": CURSOR, "bold": True}
        else:
            base = {"fg": FOREGROUND, "bg": SURFACE if index % 2 else STRIPE, "bold": False}
        out.append(table_line(texts, base, texts[STATE]))
    while len(out) < lines - 1:
        out.append(style.sgr(FOREGROUND, SURFACE) + " " * columns)
    out.append(style.sgr(FOREGROUND, PANEL) + " " * columns)  # the footer's bar (its keys come with Textual)
    return out[:lines]


_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _clip(line: str, width: int) -> str:
    """``line`` (text and SGR sequences) cut to ``width`` cells."""
    out: list[str] = []
    used = at = 0
    for match in _SGR.finditer(line):
        for ch in line[at : match.start()]:
            w = cells(ch)
            if used + w > width:
                return "".join(out)
            out.append(ch)
            used += w
        out.append(match.group())
        at = match.end()
    for ch in line[at:]:
        w = cells(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out)


# -- the terminal ------------------------------------------------------------------------------------
ENTER = "\x1b[?1049h\x1b[?25l\x1b[?7l"  # the alternate screen, no cursor, no autowrap
LEAVE = "\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l"


class EarlyPaint:
    """The cached Queue on the alternate screen, until Textual takes over (or ``leave``)."""

    def __init__(self, out: int, fd: int, modes: list | None, echo: Callable[[bytes], None] | None = None) -> None:
        self.out = out
        self.fd = fd
        self.modes = modes  # the terminal's modes before the paint (echo was turned off meanwhile)
        self.on_screen = True  # the alternate screen is ours to leave
        self.painted_at = time.monotonic()
        # the keys typed while the paint shows, read as they come (for the live console: ``earlykeys``)
        # (``echo``: ``earlyecho.FilterEcho.feed``, drawing the ``/`` box for them, in the reader's thread: the
        # only writer until ``typed`` has stopped it, which ``leave`` and ``takes_over`` do before writing)
        self.keys = KeyReader(fd, echo) if modes is not None else None

    def typed(self) -> list[bytes]:
        """Stop reading the terminal; the bytes typed so far, one entry per read."""
        return self.keys.stop() if self.keys is not None else []

    def restore_modes(self) -> None:
        if self.modes is not None:
            import termios

            try:
                termios.tcsetattr(self.fd, termios.TCSANOW, self.modes)
            except termios.error:
                pass
            self.modes = None

    def takes_over(self) -> tuple[list | None, list[bytes]]:
        """Textual's driver starts on this screen: the modes it must restore at exit (the ones from
        before the paint: the terminal stays quiet until the driver sets its own, so no key typed
        meanwhile is echoed or held for a line) and the bytes typed while the paint showed. From
        here, leaving the screen is the driver's job."""
        typed = self.typed()
        modes, self.modes = self.modes, None
        self.on_screen = False
        return modes, typed

    def leave(self) -> None:
        """Back to the normal screen, as before the paint (nothing when Textual took over)."""
        self.typed()  # (a login in the terminal reads it next: keys read already wait for the console)
        if self.on_screen:
            self.on_screen = False
            _write(self.out, LEAVE)
        self.restore_modes()

    def stream(self, out: TextIO) -> TextIO:
        """``out``, leaving this screen before anything is written to it (a login in the terminal)."""
        return cast(TextIO, _Leaving(self, out))


class _Leaving:
    def __init__(self, early: EarlyPaint, out: TextIO) -> None:
        self.early, self.out = early, out

    def write(self, text: str) -> int:
        self.early.leave()
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.out, name)


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    while data:
        try:
            data = data[os.write(fd, data) :]
        except InterruptedError:
            continue
        except OSError:
            return


def paint(
    config: Config, digested: dict | None, environ: dict[str, str] | None = None, now: float | None = None
) -> EarlyPaint | None:
    """Paint the cached Queue from ``digested`` (``snapcache.read_paint``) when ``wanted`` and some
    configured cluster has a cached entry in it; None otherwise (nothing written)."""
    env = dict(os.environ if environ is None else environ)
    if digested is None or not wanted(env):
        return None
    fd = sys.stdout.fileno()
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return None
    if size.columns < MIN_COLUMNS or size.lines < MIN_LINES:
        return None
    try:
        if not any(c.entry is not None for c in shown_clusters(config, digested)):
            return None
        style = Style(colour_system(env, config.theme))
        lines = frame(config, digested, size.columns, size.lines, style, time.time() if now is None else now)
    except Exception:  # a file this code does not expect: Textual paints the snapshot in a moment anyway
        return None
    modes = _quiet(sys.stdin.fileno())
    text = ENTER + "".join(f"\x1b[{y + 1};1H{line}" for y, line in enumerate(lines)) + "\x1b[0m"
    sys.stdout.flush()
    _write(fd, text)
    from yanflow_tui.earlyecho import FilterEcho  # (it draws in this module's style: imported once painted)

    echo = FilterEcho(lambda out: _write(fd, out), len(lines), size.columns, lines[-1], style)
    return EarlyPaint(fd, sys.stdin.fileno(), modes, echo.feed)


def _quiet(fd: int) -> list | None:
    """Turn off the echo of keys typed before Textual reads them (they would be drawn over the
    paint), line editing (each key is read as typed: ``earlykeys``) and Enter's translation to a
    newline (Textual reads ``\\r`` as Enter); the modes before, for ``restore_modes``."""
    import termios

    try:
        modes = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR)
        quiet[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN)
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        return None
    return modes
