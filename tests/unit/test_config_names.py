"""Typos in ``theme:`` and in ``keymap:`` ids: the app checks them at startup against its themes and
the registry of its binding ids, and reports each at its file:line with a "did you mean"."""

from __future__ import annotations

import pytest
from waiting import wait_for

from yanflow_tui.app import YanflowApp, binding_ids
from yanflow_tui.config import parse_config
from yanflow_tui.errors import SpecError

BAD = """\
theme: textual-drak
keymap:
  quit: ctrl+q
  cancel-jobb: x
  frobnicate: y
clusters:
  - {name: local, kind: local}
"""


def test_typos_in_theme_and_keymap_ids_are_located_errors(home):
    config = parse_config(BAD, "config.yaml")
    with pytest.raises(SpecError) as caught:
        YanflowApp(config)
    assert str(caught.value).splitlines() == [
        "config.yaml:1: theme: unknown theme 'textual-drak'; did you mean \"textual-dark\"?",
        "config.yaml:4: keymap.cancel-jobb: unknown binding id 'cancel-jobb'; did you mean \"cancel-job\"?",
        "config.yaml:5: keymap.frobnicate: unknown binding id 'frobnicate'; one of: "
        + ", ".join(sorted(binding_ids())),
    ]


def test_the_registry_holds_the_ids_of_the_app_its_screens_dialogs_and_widgets():
    ids = binding_ids()
    assert {
        "show-queue",
        "quit",
        "toggle-theme",
        "cancel-job",
        "filter-nodes",
        "open-node",
        "submit-form",
        "save-log",
        "detail-close",
        "confirm-yes",
        "prompt-cancel",
        "table-row-down",
    } <= ids


async def test_good_names_still_apply(home):
    text = (
        BAD.replace("textual-drak", "textual-light")
        .replace("cancel-jobb: x", "filter-jobs: F")  # x is the Queue's job-shell
        .replace("  frobnicate: y\n", "  confirm-no: ctrl+n\n")
    )
    app = YanflowApp(parse_config(text, "config.yaml"))
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: app.theme == "textual-light", what="the configured theme")
        assert app.current_theme.name == "textual-light"


CLASH = """\
clusters:
  - {name: local, kind: local}
keymap:
  filter-jobs: F
  cancel-job: s
"""
CLASH_ERROR = (
    "config.yaml:5: keymap.cancel-job: key 's' is taken by submit-job (Submit) on the Queue screen;"
    " choose another key, or remap submit-job too"
)


def test_a_keymap_key_another_binding_of_the_screen_holds_is_refused_at_start(home):
    with pytest.raises(SpecError) as caught:
        YanflowApp(parse_config(CLASH, "config.yaml"))
    assert str(caught.value).splitlines() == [CLASH_ERROR]


def test_a_keymap_that_moves_both_bindings_or_a_read_only_twin_is_no_clash(home):
    YanflowApp(parse_config(CLASH + "  submit-job: S\n", "config.yaml"))  # s handed over: no clash
    YanflowApp(parse_config(CLASH.replace("cancel-job: s", "detail-shell: X"), "config.yaml"))  # with its twin


@pytest.mark.parametrize("command", [["jobs"], ["nodes"], []])
def test_headless_commands_and_the_console_report_a_bad_theme_or_keymap_and_exit_2(home, tmp_path, capsys, command):
    """The same error, in the same words, from every command (the console's included), and exit status 2."""
    from yanflow_tui import cli
    from yanflow_tui.cli.context import EXIT_USAGE

    path = tmp_path / "config.yaml"
    path.write_text(CLASH + "theme: textual-drak\n")
    assert cli.main(["--config", str(path), *command]) == EXIT_USAGE == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"yanflow-tui: error: {path}:5: " + CLASH_ERROR.split(":5: ", 1)[1],
        f"yanflow-tui: error: {path}:6: theme: unknown theme 'textual-drak'; did you mean \"textual-dark\"?",
    ]
