"""What the console loads before its first paint: only the Queue and what it needs. The other screens,
TextArea, urllib's HTTP client, shtab and the clusters' SDKs are imported when first wanted; a plain
console start reads its options without building every command's parser."""

from __future__ import annotations

import subprocess
import sys

import pytest
from textual.widgets import Input, TextArea

from yanflow_tui import keys
from yanflow_tui.cli import parser

FIRST_PAINT = """
import asyncio, sys
from yanflow_tui.app import YanflowApp
from yanflow_tui.config import parse_config

async def main():
    app = YanflowApp(parse_config("clusters:\\n  - {name: here, kind: local}\\n", "c.yaml"))
    async with app.run_test() as pilot:
        await pilot.pause()
        assert type(app.screen).__name__ == "QueueScreen", app.screen
        print(" ".join(sorted(sys.modules)))

asyncio.run(main())
"""
LATER = (
    "yanflow_tui.screens.nodes",
    "yanflow_tui.screens.clusters",
    "yanflow_tui.screens.detail",
    "yanflow_tui.screens.node_jobs",
    "yanflow_tui.screens.submit.screen",
    "yanflow_tui.screens.logs.screen",
    "yanflow_tui.screens.tensorboard",
    keys.TEXT_AREA_MODULE,
    "urllib.request",
    "shtab",
    "kubernetes",
    "determined",
    "asyncssh",
)


def test_the_first_paint_loads_only_the_queue(home):
    out = subprocess.run([sys.executable, "-c", FIRST_PAINT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert "yanflow_tui.screens.queue" in loaded  # the walk saw the app's modules
    assert sorted(loaded & set(LATER)) == []


EARLY_PAINT = """
import sys
from yanflow_tui import cli, earlypaint, snapcache
from yanflow_tui.cli import parser

config = cli.read_config(parser.console_args([]))
earlypaint.paint(config, snapcache.read_paint(snapcache.default_path())[0])
print(" ".join(sorted(sys.modules)))
"""
NOT_BEFORE_THE_EARLY_PAINT = ("textual", "rich", "yanflow_tui.hub", "yanflow_tui.app", "yanflow_tui.inside", "shtab")
CONSOLE_START = {"yanflow_tui.cli.context", "yanflow_tui.cli.parser", "yanflow_tui.cli.console"}


def test_the_early_paint_comes_before_textual_the_hub_and_the_commands_modules(home):
    """``cli.console.run_console`` paints the cached Queue with only the config and the digest loaded."""
    out = subprocess.run([sys.executable, "-c", EARLY_PAINT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = {name.split(".")[0] if name.split(".")[0] in ("textual", "rich") else name for name in out.stdout.split()}
    assert "yanflow_tui.earlypaint" in loaded
    assert sorted(loaded & set(NOT_BEFORE_THE_EARLY_PAINT + LATER)) == []
    # of the CLI package, only the entry's own modules: no verb module (nor the whole parser's shtab)
    assert {name for name in loaded if name.startswith("yanflow_tui.cli.")} <= CONSOLE_START


def test_is_typing_knows_text_area_without_importing_it():
    """``keys`` looks TextArea up where Textual defines it; a Textual that moves it fails here."""
    assert TextArea.__module__ == keys.TEXT_AREA_MODULE
    assert keys.is_typing(TextArea()) and not keys.is_typing(TextArea(read_only=True))
    assert keys.is_typing(Input()) and not keys.is_typing(None)


@pytest.mark.parametrize(
    "argv",
    [[], ["--debug"], ["--read-only", "--config", "x.yaml"], ["--config=jobs"], ["--conf", "a.yaml"]],
)
def test_a_console_start_reads_its_options_as_the_whole_parser_does(argv):
    fast = parser.console_args(argv)
    assert fast is not None and vars(fast) == vars(parser.build().parse_args(argv))


@pytest.mark.parametrize(
    "argv", [["jobs"], ["--debug", "jobs", "--json"], ["--config"], ["-h"], ["--version"], ["--nope"], ["--", "x"]]
)
def test_anything_else_goes_to_the_whole_parser(argv):
    assert parser.console_args(argv) is None


def test_the_queue_styles_are_read_with_the_apps():
    """Read when the Queue is first shown, they would make Textual parse every rule again before the first paint."""
    from yanflow_tui.app import YanflowApp
    from yanflow_tui.screens.queue import QueueScreen

    assert QueueScreen.CSS_PATH in YanflowApp.CSS_PATH
