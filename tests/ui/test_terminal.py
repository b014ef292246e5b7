"""The keyboard model in a real terminal: the console runs in a pseudo-terminal over the fake backend,
is fed the bytes a terminal sends (``1``, ``\\t``, ``\\r``, ``\\x1b``...), and its screen is read back
through a VT100 emulator. No pilot: keys arrive as a terminal delivers them, several in one read when
typed fast. One console per size walks from every screen to every other by its number key, from each
focus state; the quit test starts one console per screen, side by side."""

from __future__ import annotations

import time

import pytest
from terminal import Terminal

SIZES = [(80, 24), (120, 40)]
SCREENS = {"1": "Queue", "2": "Nodes", "3": "Submit", "4": "Logs"}
SAMPLE = "sample_jobs/local-shell.yaml"


@pytest.fixture
def tty_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def go(term: Terminal, key: str) -> None:
    term.press(key)
    term.wait_title(SCREENS[key])


def enter_state(term: Terminal, screen: str, state: str) -> None:
    """Put the console, on ``screen`` already, in focus ``state``."""
    if state == "pane":  # Logs with a job's pane: l on the Queue's first job
        go(term, "1")
        term.press("l")
        term.wait_title("Logs")
        term.wait_text("epoch 29")
        return
    if state == "empty":
        return
    if state == "dialog":
        term.press("?")
        term.wait_text(r"Keys  \(remap")
    elif state == "confirm":  # the Queue's cancel confirmation
        term.press("c")
        term.wait_text(r"Cancel job 101")
    elif state == "load":  # a spec file loaded: typed and entered the first time, ctrl+o again later
        term.wait_gone("loaded ")  # the last load's note has gone
        term.press("ctrl+o")
        shown = term.wait(lambda text: ("Spec file:" in text or "loaded " in text) and text, "the path box or a load")
        if "loaded " not in shown:
            term.press(SAMPLE, "enter")
        term.wait_text(f"loaded {SAMPLE}")
    elif state == "field":
        open_field(term, screen)


def open_field(term: Terminal, screen: str) -> None:
    """Focus a text field, check that the app-wide keys are text there, and leave it with escape."""
    if screen == "1":
        term.press("/")
        term.wait_text("filter: words")
    elif screen == "2":
        term.press("/")
        term.wait_text("filter: text in node")
    elif screen == "3":
        term.press("tab", "tab")  # from the cluster chooser: job type, then Name
        term.wait_text("Name: Any text")
    else:
        term.press("/", "\x15")  # ctrl+u: the box keeps the last search
        term.wait_text("search \\(enter: find")
    marker = "x1234q?r"
    term.press(marker)  # typed, every one: no screen switch, no quit, no help, no refresh
    term.wait_text(f"{marker.replace('?', '[?]')}")
    assert term.title() == SCREENS[screen]
    if screen == "3":
        term.press(*["backspace"] * len(marker))
        term.wait_gone("x1234q")
    term.press("escape")
    if screen == "3":
        term.wait_text("Cluster: where the job runs")  # back on the main widget
    else:
        term.wait_gone("x1234q")  # the box closed (and its text with it)
    assert term.title() == SCREENS[screen]


# Every ordered pair of the four screens once: 1->2, 2->3, ... 2->1 (an Euler circuit of the 12 moves).
CIRCUIT = ["1", "2", "3", "4", "1", "3", "2", "4", "3", "1", "4", "2", "1"]
STATES = {  # focus state: the screens it applies to
    "empty": "1234",
    "field": "1234",
    "dialog": "1234",
    "load": "3",
    "confirm": "1",
}


def walk(term: Terminal, state: str) -> list[tuple[str, str]]:
    """From each screen in ``state``, each other screen by its number key."""
    moves = []
    if len(STATES[state]) == 4:
        pairs = list(zip(CIRCUIT, CIRCUIT[1:]))
    else:
        pairs = [(STATES[state], target) for target in SCREENS if target != STATES[state]]
    for source, target in pairs:
        if term.title() != SCREENS[source]:
            go(term, source)
        enter_state(term, source, state)
        go(term, target)
        moves.append((source, target))
    return moves


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_screen_reaches_every_other_by_its_key_from_every_focus_state(tty_home, size):
    term = Terminal.console(tty_home, *size)
    started = time.monotonic()
    try:
        term.wait_text("train-resnet", timeout=30)
        moves = {state: walk(term, state) for state in ("empty",)}  # the Logs without a pane first
        enter_state(term, "4", "pane")  # then with one: its search box is the text field
        moves.update({state: walk(term, state) for state in ("field", "dialog", "load", "confirm")})
        assert {state: len(found) for state, found in moves.items()} == {
            "empty": 12,
            "field": 12,
            "dialog": 12,
            "load": 3,
            "confirm": 3,
        }
        # Escape with nothing to leave goes back to the Queue (the Logs now has a pane, Submit a file).
        for screen in ("2", "3", "4"):
            go(term, screen)
            term.press("escape")
            term.wait_title("Queue")
        term.press("q")
        assert term.exit_code() == 0
    finally:
        term.close()
    print(f"walk at {size}: {time.monotonic() - started:.1f}s")


def test_q_quits_from_every_screen_at_both_sizes_and_f2_switches_the_mouse(tty_home):
    """One console per screen and size, side by side; the Queue's at 80x24 starts with mouse: false."""
    terms = {}
    for size in SIZES:
        for key in SCREENS:
            home = tty_home / f"{key}-{size[0]}"
            home.mkdir()
            no_mouse = ("--no-mouse",) if (key, size) == ("1", (80, 24)) else ()
            terms[key, size] = Terminal.console(home, *size, *no_mouse)
    try:
        for (key, _size), term in terms.items():
            term.wait_text("train-resnet", timeout=60)
            go(term, key)
        term = terms["1", (80, 24)]
        assert b"\x1b[?1000h" not in term.output  # mouse: false asks the terminal for no mouse reports
        term.press("f2")
        term.wait(lambda text: b"\x1b[?1000h" in term.output, "mouse reporting on")
        term.wait_text("mouse: the console's")
        term.press("f2")
        term.wait(lambda text: b"\x1b[?1000l" in term.output, "mouse reporting off")
        for term in terms.values():
            term.press("q")
        for (key, size), term in terms.items():
            assert term.exit_code() == 0, (SCREENS[key], size)
    finally:
        for term in terms.values():
            term.close()


def test_keys_typed_in_one_burst_land_in_the_fields_they_were_typed_for(tty_home):
    """Tab, enter and escape move the focus before the keys typed after them are delivered."""
    term = Terminal.console(tty_home, 100, 30)
    try:
        term.wait_text("train-resnet", timeout=30)
        go(term, "3")
        term.wait_text("Cluster: where the job runs")  # focus starts on the cluster chooser
        term.press("\t\tjob-a\techo hi\tbusybox")  # job type, Name, Command, Image: one write
        term.wait_text("Image: Container image")
        text = term.wait(lambda t: "job-a" in t and "echo hi" in t and "busybox" in t and t, "the typed texts")
        rows = {line.split()[0]: line for line in text.splitlines() if line.split()}
        assert "job-a" in rows["Name"] and "echo" not in rows["Name"]
        assert "echo hi" in rows["Command"]
        assert "busybox" in rows["Image"]
        # escape then a number key, in one write: the field is left first, then the key switches
        term.press("\x1b")
        term.wait_text("Cluster: where the job runs")
        term.press("ctrl+o")
        term.wait_text("Spec file:")
        term.press(SAMPLE + "\r2")  # load, and 2 right after it: a screen key, not a letter of the path
        term.wait_title("Nodes")
        go(term, "3")
        term.wait_text(f"{SAMPLE} ")
        assert f"{SAMPLE}2" not in term.text()
    finally:
        term.close()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_clusters_screen_is_reached_from_every_screen_and_every_screen_from_it(tty_home, size):
    """``5`` from each screen, in its empty state and with a text field focused (where it is text),
    then each screen's key from the Clusters screen; ``q`` quits from it."""
    term = Terminal.console(tty_home, *size)
    try:
        term.wait_text("train-resnet", timeout=30)
        for key in SCREENS:
            go(term, key)
            term.press("5")
            term.wait_title("Clusters")
            term.wait_text("hpc")
            go(term, key)
        # A text field focused: 5 is a character there; escape leaves the field (waited for: a lone
        # ESC followed at once by 5 would read as alt+5), then 5 goes.
        for key, box, footer in (("1", "filter: words", "l Logs"), ("2", "filter: text in node", "Collapse")):
            go(term, key)
            term.press("/")
            term.wait_text(box)
            term.press("5")
            term.wait_gone(box)  # the placeholder gives way to the typed 5
            assert term.title() == SCREENS[key]
            term.press("escape")
            # the field left: the box hidden (the footer keeps its keys while one types, so it tells nothing)
            term.wait(lambda text: "\u258a" not in text, "the filter box hidden")
            term.wait_text(footer)
            term.press("5")
            term.wait_title("Clusters")
        term.press("q")
        assert term.exit_code() == 0
    finally:
        term.close()
