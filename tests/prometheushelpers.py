"""A REAL Prometheus (Debian's ``prometheus`` package; scripts/test.sh installs it as root) started for
the tests on a free loopback port with its own TSDB under a temporary folder, scraping every second a
small fake DCGM exporter served here (Prometheus text exposition shaped as dcgm-exporter writes it).
Tests FAIL, never skip, without the binary."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

MISSING = "prometheus is not installed: run scripts/test.sh as root, or apt-get install -y prometheus"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Exporter:
    """A fake dcgm-exporter: ``set`` a GPU's series, ``clear`` them; served at ``/metrics``."""

    series: dict[tuple[str, int], dict] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    def set(self, host: str, gpu: int, util: float, fb_used: int, fb_free: int = 0, **labels: str) -> None:
        with self.lock:
            self.series[(host, gpu)] = {"util": util, "used": fb_used, "free": fb_free, "labels": labels}

    def clear(self) -> None:
        with self.lock:
            self.series.clear()

    def text(self) -> str:
        lines = []
        with self.lock:
            items = sorted(self.series.items())
        for name, key, help_ in (
            ("DCGM_FI_DEV_GPU_UTIL", "util", "GPU utilization (in %)."),
            ("DCGM_FI_DEV_FB_USED", "used", "Framebuffer memory used (in MiB)."),
            ("DCGM_FI_DEV_FB_FREE", "free", "Framebuffer memory free (in MiB)."),
        ):
            lines += [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
            for (host, gpu), values in items:
                labels = {
                    "gpu": str(gpu),
                    "UUID": f"GPU-{host.split('.')[0]}-{gpu:04d}-0000-0000-000000000000",
                    "device": f"nvidia{gpu}",
                    "modelName": "NVIDIA A100-SXM4-80GB",
                    "Hostname": host,
                    "DCGM_FI_DRIVER_VERSION": "535.129.03",
                    **values["labels"],
                }
                text = ",".join(f'{k}="{v}"' for k, v in labels.items())
                lines.append(f"{name}{{{text}}} {values[key]}")
        # A series of another family, which the console's query must leave out.
        lines += ["# TYPE DCGM_FI_DEV_SM_CLOCK gauge", 'DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="gpu01"} 1410']
        return "\n".join(lines) + "\n"

    def start(self) -> Exporter:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def address(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@dataclass
class Prometheus:
    url: str
    process: subprocess.Popen
    exporter: Exporter

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=5) as answer:
            return answer.read()

    def query(self, promql: str) -> list[dict]:
        data = json.loads(self.get("/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
        return data["data"]["result"]

    def query_requests(self) -> int:
        """How many ``/api/v1/query`` requests Prometheus itself has counted (its own /metrics)."""
        text = self.get("/metrics").decode()
        found = re.findall(r'prometheus_http_requests_total\{[^}]*handler="/api/v1/query"[^}]*\} (\d+)', text)
        return sum(int(n) for n in found)

    def wait_for_values(self, expected: dict[tuple[str, int], float], timeout: float = 30) -> None:
        """Until Prometheus answers ``expected`` ((Hostname, gpu) -> utilisation) for those GPUs."""
        deadline = time.monotonic() + timeout
        seen: dict = {}
        while time.monotonic() < deadline:
            seen = {
                (s["metric"].get("Hostname"), int(s["metric"]["gpu"])): float(s["value"][1])
                for s in self.query("DCGM_FI_DEV_GPU_UTIL")
            }
            if all(seen.get(k) == v for k, v in expected.items()):
                return
            time.sleep(0.2)  # polling a condition, not waiting a fixed time
        raise AssertionError(f"prometheus never showed {expected}; it has {seen}")


def _binary() -> str:
    found = shutil.which("prometheus") or ("/usr/bin/prometheus" if os.access("/usr/bin/prometheus", os.X_OK) else "")
    if not found:
        pytest.fail(MISSING, pytrace=False)
    return found


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory) -> Iterator[Prometheus]:
    binary = _binary()
    exporter = Exporter().start()
    folder: Path = tmp_path_factory.mktemp("prometheus")
    config = folder / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: dcgm\n    static_configs: [{{targets: ['{exporter.address}']}}]\n"
    )
    port = free_port()
    log = (folder / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Prometheus(f"http://127.0.0.1:{port}", process, exporter)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"prometheus exited ({process.returncode}): {(folder / 'prometheus.log').read_text()}")
        try:
            if server.get("/-/ready"):
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("prometheus did not get ready in 60 s")
        time.sleep(0.1)  # polling readiness
    yield server
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
    exporter.stop()
    log.close()


@pytest.fixture
def dcgm(prometheus) -> Iterator[Exporter]:
    """The exporter, emptied before and after the test."""
    prometheus.exporter.clear()
    yield prometheus.exporter
    prometheus.exporter.clear()
