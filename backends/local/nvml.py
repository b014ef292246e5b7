"""Read this machine's GPUs through NVML (``nvidia-ml-py``, imported as ``pynvml``).

All calls block briefly; callers run ``read`` in a thread. Without the library, a driver or a GPU,
``read`` returns None and ``reason`` says why in one line. It never raises.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class GpuReading:
    index: int
    name: str
    uuid: str | None
    utilization: float | None
    memory_used_mb: int | None
    memory_total_mb: int | None
    pids: tuple[int, ...] = ()


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class NvmlProbe:
    def __init__(self) -> None:
        self._nvml = None
        self._lock = threading.Lock()
        self.reason = ""
        self._failed_at: float | None = None

    @property
    def _failed(self) -> bool:
        """A failed init is retried after RETRY_SECONDS (a driver may be loaded meanwhile)."""
        return self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_SECONDS

    def _fail(self, reason: str) -> None:
        self._failed_at, self.reason = time.monotonic(), reason

    def _init(self):
        if self._nvml is not None or self._failed:
            return self._nvml
        try:
            import pynvml  # provided by nvidia-ml-py
        except ImportError:
            self._fail("NVML unavailable: the nvidia-ml-py package is not installed")
            return None
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError subclasses, or anything a broken driver raises
            self._fail(f"NVML unavailable: {_text(exc) or type(exc).__name__}")
            return None
        self._nvml = pynvml
        return pynvml

    def read(self) -> list[GpuReading] | None:
        """Current GPUs, or None when NVML cannot be used (see ``reason``)."""
        with self._lock:
            nvml = self._init()
            if nvml is None:
                return None
            try:
                count = nvml.nvmlDeviceGetCount()
                gpus = [self._device(nvml, i) for i in range(count)]
            except Exception as exc:
                self.reason = f"NVML error: {_text(exc) or type(exc).__name__}"
                return None
            self.reason = "" if gpus else "no NVIDIA GPU found"
            return gpus

    @staticmethod
    def _device(nvml, index: int) -> GpuReading:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        name = _optional(lambda: _text(nvml.nvmlDeviceGetName(handle))) or "GPU"
        uuid = _optional(lambda: _text(nvml.nvmlDeviceGetUUID(handle)))
        util = _optional(lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
        mem = _optional(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        procs = _optional(lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle)) or []
        return GpuReading(
            index=index,
            name=name,
            uuid=uuid,
            utilization=util,
            memory_used_mb=int(mem.used) // 2**20 if mem is not None else None,
            memory_total_mb=int(mem.total) // 2**20 if mem is not None else None,
            pids=tuple(int(p.pid) for p in procs),
        )

    def close(self) -> None:
        with self._lock:
            if self._nvml is not None:
                _optional(self._nvml.nvmlShutdown)
                self._nvml = None


def _optional(call):
    """NVML answers NotSupported for some queries on some GPUs; treat any failure as unknown."""
    try:
        return call()
    except Exception:
        return None
