"""A fake ``pynvml`` for tests, importable by child processes too (tests put tests/fakes on PYTHONPATH).

It reads its devices from the JSON file named by ``FAKE_NVML`` on every call, so a test can change
utilisation or processes while the code under test runs:

    {"driver": true, "devices": [{"name": "NVIDIA A100", "util": 37, "mem_used": 1024,
                                   "mem_total": 40960, "pids": [1234]}]}

With ``"driver": false`` (or no file), ``nvmlInit`` raises like a machine without the NVIDIA driver.
"""

import json
import os
from types import SimpleNamespace


class NVMLError(Exception):
    def __init__(self, value=None):
        self.value = value

    def __str__(self):
        return "NVML Shared Library Not Found" if self.value == 12 else f"NVML error {self.value}"


NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_NOT_SUPPORTED = 3
_calls = []


def _config():
    path = os.environ.get("FAKE_NVML", "")
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {"driver": False, "devices": []}


def _device(handle):
    return _config()["devices"][handle]


def nvmlInit():
    _calls.append("init")
    if not _config().get("driver", True):
        raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)


def nvmlShutdown():
    _calls.append("shutdown")


def nvmlDeviceGetCount():
    return len(_config()["devices"])


def nvmlDeviceGetHandleByIndex(index):
    if index >= nvmlDeviceGetCount():
        raise NVMLError(2)
    return index


def nvmlDeviceGetName(handle):
    return _device(handle).get("name", "NVIDIA A100-SXM4-80GB")


def nvmlDeviceGetUUID(handle):
    return _device(handle).get("uuid", f"GPU-fake-{handle}")


def nvmlDeviceGetUtilizationRates(handle):
    util = _device(handle).get("util")
    if util is None:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return SimpleNamespace(gpu=util, memory=0)


def nvmlDeviceGetMemoryInfo(handle):
    dev = _device(handle)
    mib = 2**20
    return SimpleNamespace(
        used=dev.get("mem_used", 0) * mib,
        total=dev.get("mem_total", 81920) * mib,
        free=(dev.get("mem_total", 81920) - dev.get("mem_used", 0)) * mib,
    )


def nvmlDeviceGetComputeRunningProcesses(handle):
    return [SimpleNamespace(pid=p, usedGpuMemory=0) for p in _device(handle).get("pids", [])]
