"""Pilot tests of the console inside a running Kubernetes job (API emulator): the Files view lists the
job's folder, opens a sub-folder and downloads a file with its progress bar; a port-forward opened in
the detail is listed there and closed with a key (or at the console's exit); read-only, ``x`` says why
and opens nothing."""

from __future__ import annotations

import hashlib
import os
import socket

import pytest
from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster
from textual.widgets import DataTable, Input, Static
from uihelpers import footer_text, make_app
from waiting import wait_for

from yanflow_tui.backends.kubernetes import tbfiles
from yanflow_tui.screens.detail import JobDetailScreen
from yanflow_tui.screens.dialogs import PromptScreen
from yanflow_tui.screens.files import FilesScreen
from yanflow_tui.screens.queue import JobTable

NS = "ml"


def seed(emulator):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-1", NS, node="gpu-a", job="train"))
    root = emulator.streams.root(NS, "train-1")
    (root / "ckpt").mkdir()
    (root / "ckpt" / "w.bin").write_bytes(os.urandom(2_000_000))
    (root / "notes.txt").write_text("hi\n")
    return root


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


async def open_detail(pilot, app) -> JobDetailScreen:
    await wait_for(pilot, lambda: "k8s/ml/train" in rows(app), what="rows")
    app.screen.query_one(JobTable).move_cursor_to_key("k8s/ml/train")
    await pilot.pause()
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="the detail")
    return app.screen


def cells(table: DataTable) -> list[str]:
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_files_view_lists_opens_a_folder_and_downloads_with_progress(home, emulator, kubeconfig, tmp_path):
    root = seed(emulator)
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(160, 40)) as pilot:
        await open_detail(pilot, app)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FilesScreen), what="the Files view")
        files = app.screen
        table = files.query_one("#files", DataTable)
        await wait_for(pilot, lambda: cells(table) == ["ckpt/", "notes.txt"], what="the listing")
        assert str(files.query_one("#files-path", Static).render()) == str(root)
        footer = await wait_for(pilot, lambda: "esc Close" in footer_text(app) and footer_text(app), what="keys")
        assert "esc Close" in footer and "d Download" in footer and "⌫ Up" in footer
        await pilot.press("enter")  # into ckpt/
        await wait_for(pilot, lambda: cells(table) == ["w.bin"], what="the sub-folder")
        assert "1.9 MiB" in str(table.get_row_at(0)[1])
        seen: list[tuple[int, int | None]] = []
        show = files.progress.show

        def recorded() -> None:
            if files.progress.figures is not None:
                seen.append(files.progress.figures)
            show()

        files.progress.show = recorded  # type: ignore[method-assign]
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen), what="where to")
        target = tmp_path / "w.bin"
        app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: target.exists() and not files.progress.busy, what="the download", timeout=30)
        assert (
            hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256((root / "ckpt/w.bin").read_bytes()).digest()
        )
        assert seen and seen[-1] == (2_000_000, 2_000_000)  # the bar was fed, to the end
        await pilot.press("backspace")
        await wait_for(pilot, lambda: cells(table) == ["ckpt/", "notes.txt"], what="back up")


async def test_a_port_forward_is_listed_in_the_detail_and_closed_with_a_key(home, emulator, kubeconfig, tcp_server):
    seed(emulator)
    emulator.streams.map_port(NS, "train-1", 6006, tcp_server(bytes.upper))
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(160, 40)) as pilot:
        detail = await open_detail(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen), what="which port")
        app.screen.query_one(Input).value = "6006"
        await pilot.press("enter")
        forwards = detail.query_one("#forwards", Static)
        await wait_for(pilot, lambda: "port 6006" in str(forwards.render()), what="the forward listed")
        (forward,) = app.forwards.of("k8s/ml/train")
        socket.create_connection(("127.0.0.1", forward.local_port), timeout=5).close()  # it listens
        await pilot.press("P")
        await wait_for(pilot, lambda: not app.forwards.of("k8s/ml/train"), what="closed")
        await wait_for(pilot, lambda: "none" in str(forwards.render()), what="the list emptied")
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", forward.local_port), timeout=5).close()
        await pilot.press("p")  # another, left open: the console's exit closes it
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen), what="which port")
        app.screen.query_one(Input).value = "6006"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.forwards.of("k8s/ml/train"), what="the second forward")
        (left_open,) = app.forwards.of("k8s/ml/train")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", left_open.local_port), timeout=5).close()


async def test_read_only_x_refuses_the_shell_before_any_exec(home, emulator, kubeconfig):
    seed(emulator)
    app = make_app(cluster(kubeconfig), read_only=True)
    notes: list[str] = []
    async with app.run_test(size=(160, 40)) as pilot:
        notify = app.notify
        app.notify = lambda message, *a, **kw: (notes.append(message), notify(message, *a, **kw))[1]
        await wait_for(pilot, lambda: "k8s/ml/train" in rows(app), what="rows")
        app.screen.query_one(JobTable).move_cursor_to_key("k8s/ml/train")
        await pilot.pause()
        await pilot.press("x")
        await wait_for(pilot, lambda: notes, what="the refusal")
        assert notes[-1].startswith("read-only: shell refused")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="the detail")
        await pilot.press("x")
        await wait_for(pilot, lambda: len(notes) == 2, what="the detail's refusal")
        assert notes[-1].startswith("read-only: shell refused")
    # the detail's curves read the pod's event files by exec (a read); the refused shell opened nothing
    reads = (tbfiles.RESOLVE, tbfiles.LIST, tbfiles.READ)
    assert [e for e in emulator.streams.execs if e[3][:2] != ("sh", "-c") or e[3][2] not in reads] == []
