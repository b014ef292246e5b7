"""The Prometheus GPU metrics, without a server: the answer recorded from a real Prometheus 2.42
(tests/data/prometheus/dcgm-query.json, scraping the tests' fake DCGM exporter) read into readings,
joined onto nodes (host names, UUIDs, indices, Kubernetes pods), bad answers, the ``metrics:``
config entry and its secrets."""

from __future__ import annotations

import json
import logging
import ssl

import pytest
from paths import DATA

from yanflow_tui import applog, gpumetrics
from yanflow_tui.config import parse_config
from yanflow_tui.errors import SpecError
from yanflow_tui.model import ClusterConfig, Gpu, GpuState, Node

ANSWER = json.loads((DATA / "prometheus" / "dcgm-query.json").read_text())


def node(name: str, gpus: int = 2, **gpu_fields) -> Node:
    return Node("c", name, "mixed", gpus_total=gpus, gpus=tuple(Gpu(i, **gpu_fields) for i in range(gpus)))


def test_the_recorded_answer_gives_one_reading_per_gpu_with_its_series_merged():
    readings = {(r.hosts[2], r.index): r for r in gpumetrics.parse_answer(ANSWER)}
    assert set(readings) == {("GPU01.cluster.example", 0), ("gpu01", 1), ("gpu02", 0)}
    first = readings[("GPU01.cluster.example", 0)]
    assert (first.utilization, first.memory_used_mb, first.memory_free_mb) == (87, 40960, 40960)
    assert first.uuid == "GPU-GPU01-0000-0000-0000-000000000000" and first.model == "NVIDIA A100-SXM4-80GB"
    assert (readings[("gpu02", 0)].pod, readings[("gpu02", 0)].namespace) == ("train-0-abcde", "ml")


def test_nodes_match_by_case_and_short_hostname_and_take_util_and_memory():
    readings = gpumetrics.parse_answer(ANSWER)
    nodes = gpumetrics.enrich([node("gpu01"), node("GPU02.hpc"), node("gpu03")], readings)
    by = {n.name: n for n in nodes}
    assert [(g.utilization, g.memory_used_mb, g.memory_total_mb) for g in by["gpu01"].gpus] == [
        (87, 40960, 81920),
        (3, 1024, 81920),
    ]
    assert by["GPU02.hpc"].gpus[0].utilization == 55 and by["GPU02.hpc"].gpus[1].utilization is None
    assert by["gpu03"] == node("gpu03")  # nothing for it: unchanged


def test_a_known_uuid_wins_over_the_index():
    readings = gpumetrics.parse_answer(ANSWER)
    uuid = "GPU-gpu01-0001-0000-0000-000000000000"  # the exporter's gpu 1
    swapped = Node("c", "gpu01", "mixed", gpus_total=2, gpus=(Gpu(0, uuid=uuid), Gpu(1)))
    (out,) = gpumetrics.enrich([swapped], readings)
    assert [g.utilization for g in out.gpus] == [3, None]


def test_a_pods_devices_go_to_its_jobs_gpus_whatever_their_index():
    readings = gpumetrics.parse_answer(ANSWER)  # gpu02's device 0 is used by ml/train's pod train-0-abcde
    gpus = (Gpu(0, GpuState.ALLOCATED, "ml/other"), Gpu(1, GpuState.ALLOCATED, "ml/train"))
    (out,) = gpumetrics.enrich([Node("c", "gpu02", "mixed", gpus_total=2, gpus=gpus)], readings)
    assert [g.utilization for g in out.gpus] == [None, 55]
    assert gpumetrics.owns("ml/train", "ml", "train") and not gpumetrics.owns("ml/train", "dev", "train-0")
    assert not gpumetrics.owns("ml/train", "ml", "trainer-0") and not gpumetrics.owns("123", "", "train")


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "prometheus error: parse error"),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "prometheus gave a bad answer"),
        ([1, 2], "prometheus gave a bad answer"),
        ("nonsense", "prometheus gave a bad answer"),
    ],
)
def test_bad_answers_say_why(payload, why):
    with pytest.raises(gpumetrics.MetricsError, match=why):
        gpumetrics.parse_answer(payload)


def test_broken_series_are_skipped():
    payload = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"__name__": gpumetrics.UTIL, "Hostname": "a", "gpu": "0"}, "value": [1, "NaN"]},
                {"metric": {"__name__": gpumetrics.UTIL, "Hostname": "a", "gpu": "1"}, "value": [1, "x"]},
                {"metric": {"__name__": gpumetrics.UTIL, "Hostname": "a", "gpu": "2"}},
                {"metric": {"__name__": gpumetrics.UTIL, "Hostname": "a", "gpu": "3"}, "value": [1, "4.5"]},
            ],
        },
    }
    assert [(r.index, r.utilization) for r in gpumetrics.parse_answer(payload)] == [(3, 4.5)]


CONFIG = """clusters:
  - name: hpc
    kind: slurm
    ssh: alice@login
    metrics: {prometheus: "https://prom.example:9090/", bearer_token_file: /tmp/t, verify_tls: false, timeout: 2}
  - name: k8s
    kind: kubernetes
    metrics: {prometheus: "http://prom:9090"}
  - name: here
    kind: local
"""


def test_metrics_is_a_cluster_key_of_every_kind():
    config = parse_config(CONFIG, "c.yaml", env={})
    hpc, k8s, here = config.clusters
    prom = gpumetrics.config_of(hpc)
    assert prom == gpumetrics.PrometheusConfig(
        "https://prom.example:9090", bearer_token_file="/tmp/t", verify_tls=False, timeout=2
    )
    assert gpumetrics.config_of(k8s) == gpumetrics.PrometheusConfig("http://prom:9090")
    assert gpumetrics.config_of(here) is None
    assert hpc.options["ssh"] == "alice@login"  # the kind's own keys are untouched


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{prometheus: "ftp://x"}', "c.yaml:4: clusters[0].metrics.prometheus: expected an http:// or https:// URL"),
        ("{url: http://x}", "clusters[0].metrics.prometheus: required field is missing"),
        ("{prometheus: http://x, timeout: 0}", "clusters[0].metrics.timeout"),
        ("{prometheus: http://x, verify_tls: maybe}", "clusters[0].metrics.verify_tls"),
    ],
)
def test_a_wrong_metrics_entry_is_located(entry, message):
    text = f"clusters:\n  - name: hpc\n    kind: slurm\n    metrics: {entry}\n"
    with pytest.raises(SpecError) as raised:
        parse_config(text, "c.yaml", env={})
    assert message in str(raised.value)


def test_the_token_goes_in_the_header_and_never_in_the_log(tmp_path, caplog):
    token = tmp_path / "token"
    token.write_text("s3cr3t-bearer-token\n")
    request = gpumetrics.request_for(gpumetrics.PrometheusConfig("http://p:9090", bearer_token_file=str(token)))
    assert request.get_header("Authorization") == "Bearer s3cr3t-bearer-token"
    assert request.full_url.startswith("http://p:9090/api/v1/query?query=%7B__name__%3D~%22DCGM_FI_DEV_GPU_UTIL")
    assert "s3cr3t-bearer-token" not in applog.redact("failed with s3cr3t-bearer-token")
    password = tmp_path / "password"
    password.write_text("hunter22")
    basic = gpumetrics.request_for(
        gpumetrics.PrometheusConfig("http://p", username="alice", password_file=str(password))
    )
    assert basic.get_header("Authorization") == "Basic YWxpY2U6aHVudGVyMjI="
    assert "hunter22" not in applog.redact("hunter22") and "YWxpY2U6aHVudGVyMjI=" not in applog.redact(
        "YWxpY2U6aHVudGVyMjI="
    )


async def test_a_missing_token_file_is_a_note_not_a_crash(tmp_path, caplog):
    source = gpumetrics.MetricsSource(
        "c", gpumetrics.PrometheusConfig("http://127.0.0.1:9", bearer_token_file=str(tmp_path / "none"))
    )
    with caplog.at_level(logging.WARNING):
        assert await source.read() is None
    assert source.note.startswith("metrics: cannot read a prometheus secret file")
    assert len([r for r in caplog.records if "metrics:" in r.getMessage()]) == 1
    assert await source.read() is None  # again: no second warning for the same outage
    assert len([r for r in caplog.records if "metrics:" in r.getMessage()]) == 1


def test_tls_options_make_the_context():
    assert gpumetrics._context(gpumetrics.PrometheusConfig("http://p")) is None
    assert gpumetrics._context(gpumetrics.PrometheusConfig("https://p")).verify_mode == ssl.CERT_REQUIRED
    unverified = gpumetrics._context(gpumetrics.PrometheusConfig("https://p", verify_tls=False))
    assert unverified.verify_mode == ssl.CERT_NONE


def test_a_password_in_the_url_is_kept_out_of_the_log():
    cluster = ClusterConfig("c", "slurm", options={"metrics": {"prometheus": "https://bob:pa55word-x@p:9090"}})
    assert gpumetrics.config_of(cluster) is not None
    assert "pa55word-x" not in applog.redact("GET https://bob:pa55word-x@p:9090 failed")
