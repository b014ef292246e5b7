"""Pilot tests of the console over the real Kubernetes backend and the API emulator: the cluster goes
stale while the API server is away and comes back with fresh data; read-only sends no write; a pod
with a sidecar gets a log pane per container; the context and the namespace switch live (palette ``ctx`` /
``ns``, ``c`` / ``n`` on the Clusters screen)."""

from __future__ import annotations

import pytest
from fakes.k8s_api import make_job, make_pod
from k8shelpers import cluster, write_kubeconfig
from textual.command import CommandList, CommandPalette
from textual.widgets import Input, OptionList
from uihelpers import make_app, refreshed, screen_text
from waiting import wait_for

from yanflow_tui.errors import ReadOnlyError
from yanflow_tui.screens.clusters import ClustersScreen
from yanflow_tui.screens.dialogs import ChoiceScreen, ConfirmScreen
from yanflow_tui.screens.logs.screen import LogsScreen
from yanflow_tui.screens.nodes import NodesScreen
from yanflow_tui.screens.queue import JobTable, QueueScreen

NS = "ml"


def rows(app) -> list[str]:
    return app.screen.query_one(JobTable).row_keys


def select_row(app, key: str) -> None:
    table = app.screen.query_one(JobTable)
    table.move_cursor_to_key(key)


def seed_train(emulator) -> None:
    """One GPU node and job "train" with one pod holding 4 of its GPUs."""
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-1", NS, node="gpu-a", gpus=4, job="train"))


async def test_the_api_server_going_away_marks_the_cluster_stale_and_data_returns(home, emulator, kubeconfig):
    seed_train(emulator)
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/train" in rows(app), what="rows")
        emulator.stop()
        await wait_for(pilot, lambda: app.hub.snapshots["k8s"].health.value == "stale", what="stale")
        assert "unreachable" in app.hub.snapshots["k8s"].message
        await wait_for(pilot, lambda: "stale" in screen_text(app), what="stale drawn")
        assert "k8s/ml/train" in rows(app)  # last good data kept, the app runs on

        emulator.put("jobs", make_job("while-away", NS))
        emulator.start()
        await pilot.press("r")  # refresh now: the backend cuts its reconnect backoff short
        await wait_for(
            pilot,
            lambda: "k8s/ml/while-away" in rows(app) and app.hub.snapshots["k8s"].health.value == "ok",
            what="data back",
        )
        assert app.is_running


async def test_read_only_console_sends_no_write_to_the_api_server(home, emulator, kubeconfig):
    seed_train(emulator)
    app = make_app(cluster(kubeconfig), read_only=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/train" in rows(app), what="rows")
        select_row(app, "k8s/ml/train")
        await pilot.pause()  # the highlight handled before the keys
        notes: list[str] = []
        notify = app.notify
        app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
        for key in ("c", "s", "3"):
            await pilot.press(key)
            await wait_for(pilot, lambda key=key: len(notes) == 1 + "cs3".index(key), what=f"the refusal of {key}")
            assert notes[-1].startswith("read-only:"), notes
            assert isinstance(app.screen, QueueScreen) and not isinstance(app.screen, ConfirmScreen)
        with pytest.raises(ReadOnlyError):
            await app.hub.backend("k8s").cancel("ml/train")
    assert emulator.mutations() == []
    assert emulator.get("jobs", NS, "train") is not None


async def test_writable_console_cancels_a_kubernetes_job_after_confirmation(home, emulator, kubeconfig):
    seed_train(emulator)
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/train" in rows(app), what="rows")
        select_row(app, "k8s/ml/train")
        await pilot.pause()  # the highlight handled before the key
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm")
        await pilot.press("y")
        await wait_for(pilot, lambda: "k8s/ml/train" not in rows(app), what="row gone")
    assert [m for m, _ in emulator.mutations()] == ["DELETE", "DELETE"]  # the Job, then its Service
    assert emulator.get("jobs", NS, "train") is None


async def test_nodes_screen_shows_the_kubernetes_gpu_map_live(home, emulator, kubeconfig):
    emulator.add_node("gpu-a", 8)
    emulator.add_node("gpu-b", 8, unschedulable=True)
    emulator.put("jobs", make_job("train", NS))
    emulator.put("pods", make_pod("train-1", NS, node="gpu-a", gpus=4, job="train"))
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: "■■■■□□□□" in screen_text(app), what="node map")
        text = screen_text(app)
        assert "gpu-a" in text and "NVIDIA-A100-SXM4-80GB" in text
        assert "cordoned" in text and "✕✕✕✕✕✕✕✕" in text  # a cordoned node's GPUs are not free
        emulator.put("pods", make_pod("train-2", NS, node="gpu-a", gpus=4, job="train"))
        await wait_for(pilot, lambda: "■■■■■■■■" in screen_text(app), what="watch event on screen")


async def test_queue_field_filter_over_kubernetes_jobs(home, emulator, kubeconfig):
    seed_train(emulator)  # "train": running on gpu-a, 1 GPU per pod
    emulator.put("jobs", make_job("prep", NS, gpus=0))
    emulator.put("pods", make_pod("prep-1", NS, gpus=0, phase="Pending", job="prep"))
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: {"k8s/ml/train", "k8s/ml/prep"} <= set(rows(app)), what="rows")
        await pilot.press("slash", *"gpus:>0")
        await wait_for(pilot, lambda: rows(app) == ["k8s/ml/train"], what="GPU filter")
        box = app.screen.query_one("#filter", Input)
        box.value = "state:pend cluster:k8s"
        await wait_for(pilot, lambda: rows(app) == ["k8s/ml/prep"], what="state filter")
        box.value = "-name:train node:gpu"
        await wait_for(pilot, lambda: rows(app) == [], what="negated name, no node")
        box.value = "nodes:gpu-a"
        await wait_for(pilot, lambda: rows(app) == ["k8s/ml/train"], what="node filter")


async def test_logs_of_a_pod_with_a_sidecar_open_one_pane_per_container(home, emulator, kubeconfig):
    emulator.add_node("gpu-a", 8)
    emulator.put("jobs", make_job("side", NS))
    pod = make_pod("side-1", NS, node="gpu-a", job="side")
    pod["spec"]["containers"].append({"name": "proxy", "image": "envoyproxy/envoy:v1.31"})
    emulator.put("pods", pod)
    emulator.write_log(NS, "side-1", "training step 1")  # the first container: main
    emulator.write_log(NS, "side-1", "proxy ready", container="proxy")
    app = make_app(cluster(kubeconfig))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/side" in rows(app), what="rows")
        select_row(app, "k8s/ml/side")
        await pilot.pause()  # the highlight handled before the key
        await pilot.press("l")
        await wait_for(
            pilot, lambda: isinstance(app.screen, LogsScreen) and len(app.screen.panes) == 2, what="a pane each"
        )
        logs = app.screen
        assert isinstance(logs, LogsScreen) and [p.stream for p in logs.panes] == ["", "proxy"]
        await wait_for(pilot, lambda: "training step 1" in screen_text(app), what="the default container's log")
        assert "proxy ready" not in screen_text(app) and "k8s/ml/side side (proxy)" in screen_text(app)
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: "proxy ready" in screen_text(app), what="the sidecar's log")
        assert "training step 1" not in screen_text(app)


def seed_two_namespaces(emulator) -> None:
    """Job "in-ml" in ml on node gpu-a, job "in-b" in team-b on node gpu-b."""
    emulator.add_node("gpu-a", 8)
    emulator.add_node("gpu-b", 8)
    emulator.put("jobs", make_job("in-ml", NS))
    emulator.put("pods", make_pod("in-ml-1", NS, node="gpu-a", gpus=4, job="in-ml"))
    emulator.put("jobs", make_job("in-b", "team-b"))
    emulator.put("pods", make_pod("in-b-1", "team-b", node="gpu-b", gpus=2, job="in-b"))


def used_gpus(app) -> dict[str, int]:
    return {node.name: node.gpus_allocated for node in app.hub.snapshots["k8s"].nodes}


async def choose(pilot, app, command: str, choice: str) -> None:
    """Run the palette command ``command``, then pick ``choice`` in the dialog it opens."""
    await pilot.press("ctrl+p")
    palette = await wait_for(
        pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen, what="the command palette"
    )
    await pilot.press(*command)
    await wait_for(pilot, lambda: palette.query_one(CommandList).option_count > 0, what=f"the command {command}")
    await pilot.press("enter")
    dialog = await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen) and app.screen, what="the choices")
    dialog.query_one(OptionList).highlighted = [c.split()[0] for c in dialog.choices].index(choice)
    await pilot.press("enter")


async def scope_dialog(pilot, app, key: str, what: str) -> ChoiceScreen:
    """From the Clusters screen, ``key`` (``c`` context, ``n`` namespace): the choice dialog it opens."""
    await pilot.press("5")
    await wait_for(pilot, lambda: isinstance(app.screen, ClustersScreen), what="the Clusters screen")
    await pilot.press(key)
    return await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen) and app.screen, what=what)


async def test_palette_ns_switches_the_namespace_and_queue_and_nodes_follow(home, emulator, tmp_path):
    seed_two_namespaces(emulator)
    path = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
    app = make_app(cluster(path))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/in-ml" in rows(app), what="rows")
        assert used_gpus(app) == {"gpu-a": 4, "gpu-b": 0}
        await choose(pilot, app, "ns: k8s", "team-b")
        await wait_for(pilot, lambda: "k8s/team-b/in-b" in rows(app), what="the other namespace's jobs")
        await refreshed(pilot, app)
        assert rows(app) == ["k8s/team-b/in-b"]
        assert used_gpus(app) == {"gpu-a": 0, "gpu-b": 2}
        await pilot.press("2")
        await wait_for(pilot, lambda: isinstance(app.screen, NodesScreen), what="the Nodes screen")
        await wait_for(pilot, lambda: "14/16 GPUs free" in screen_text(app), what="team-b's 2 GPUs held, not ml's 4")


async def test_clusters_screen_c_switches_the_context_and_queue_and_nodes_follow(home, emulator, tmp_path):
    seed_two_namespaces(emulator)
    path = write_kubeconfig(tmp_path / "kubeconfig", emulator.url, others={"team": "team-b"})
    app = make_app(cluster(path))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/in-ml" in rows(app), what="rows")
        dialog = await scope_dialog(pilot, app, "c", "contexts")
        assert dialog.choices == ["emu  (now)", "team"]
        dialog.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: used_gpus(app) == {"gpu-a": 0, "gpu-b": 2}, what="the other context's pods")
        await refreshed(pilot, app)
        assert app.hub.snapshots["k8s"].jobs[0].id == "team-b/in-b" and len(app.hub.snapshots["k8s"].jobs) == 1
        await pilot.press("1")
        await wait_for(pilot, lambda: rows(app) == ["k8s/team-b/in-b"], what="the Queue in the other context")
    assert "Bearer team-token" in emulator.authorizations


async def test_all_namespaces_without_cluster_wide_rights_says_so(home, emulator, tmp_path):
    seed_two_namespaces(emulator)
    emulator.forbidden_cluster_wide = {"jobs", "pods"}
    path = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
    app = make_app(cluster(path))
    notes: list[str] = []
    async with app.run_test(size=(160, 30)) as pilot:
        notify = app.notify
        app.notify = lambda message, *args, **kwargs: (notes.append(message), notify(message, *args, **kwargs))[1]
        await wait_for(pilot, lambda: "k8s/ml/in-ml" in rows(app), what="rows")
        await choose(pilot, app, "ns: k8s", "all")
        await wait_for(pilot, lambda: any("cluster-wide" in n for n in notes), what="the refusal")
        assert any("you may not list jobs cluster-wide (HTTP 403" in n and "still namespace ml" in n for n in notes)
        await refreshed(pilot, app)
        assert rows(app) == ["k8s/ml/in-ml"]


async def test_the_namespace_dialog_starts_on_the_one_in_use_and_enter_there_keeps_it(home, emulator, tmp_path):
    seed_two_namespaces(emulator)
    path = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
    app = make_app(cluster(path))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "k8s/ml/in-ml" in rows(app), what="rows")
        dialog = await scope_dialog(pilot, app, "n", "namespaces")
        assert dialog.choices == ["all namespaces", "ml  (now)", "team-b"]
        await wait_for(pilot, lambda: dialog.query_one(OptionList).highlighted == 1, what="the cursor on ml (now)")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ClustersScreen), what="the dialog closed")
        await refreshed(pilot, app)
        assert app.hub.backend("k8s").scope("namespace") == "ml"
        await pilot.press("1")
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), what="the Queue")
        assert rows(app) == ["k8s/ml/in-ml"]


async def test_the_clusters_screen_says_the_context_namespace_and_user_of_each_cluster(home, emulator, tmp_path):
    """Kubernetes: the kubeconfig context, its namespace and its user; local: this machine's user."""
    import os
    import pwd

    from yanflow_tui.config import ClusterConfig

    kubeconfig = write_kubeconfig(tmp_path / "kc", emulator.url, others={"prod": "serving"})
    app = make_app(ClusterConfig("local", "local", refresh_seconds=0.5), cluster(kubeconfig))
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: app.hub.snapshots["k8s"].updated, timeout=20, what="the k8s cluster read")
        await pilot.press("5")
        await wait_for(pilot, lambda: isinstance(app.screen, ClustersScreen), what="the Clusters screen")
        me = pwd.getpwuid(os.getuid()).pw_name
        await wait_for(
            pilot,
            lambda: "user alice · context emu · namespace ml · read-write" in screen_text(app),
            what="the context, namespace and user",
        )
        assert f"user {me} · read-write" in screen_text(app)
        await app.hub.backend("k8s").set_scope("context", "prod")
        app.screen.refresh_data()
        await wait_for(pilot, lambda: "user bob-prod · context prod" in screen_text(app), what="the new context's user")
