"""TensorBoard event files and a checkpoint, for the YanFlow template projects, with nothing to install.

``EventWriter`` writes scalars in TensorBoard's own format (TFRecord framing, masked CRC32C, ``Event``
protocol buffers encoded by hand), so the console's curves and TensorBoard itself read them. The log
directory is ``$YANFLOW_TB_LOGDIR`` when the console sets it, else ``./tb`` (where the console looks).
"""

import json
import os
import socket
import struct
import time

_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected
_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def _crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data):
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value):
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number, wire, payload):
    key = _varint((number << 3) | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def _event(step, wall_time, summary=None, file_version=None):
    data = _field(1, 1, struct.pack("<d", wall_time)) + _field(2, 0, _varint(step))
    if file_version is not None:
        data += _field(3, 2, file_version.encode())
    if summary is not None:
        data += _field(5, 2, summary)
    return data


def logdir():
    """Where the console reads the job's event files."""
    return os.environ.get("YANFLOW_TB_LOGDIR") or os.path.join(os.getcwd(), "tb")


class EventWriter:
    """Scalars into one ``events.out.tfevents.*`` file in ``directory`` (default: ``logdir()``)."""

    def __init__(self, directory=None, suffix=""):
        self.directory = directory or logdir()
        os.makedirs(self.directory, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}{suffix}"
        self.path = os.path.join(self.directory, name)
        self._file = open(self.path, "wb")
        self._write(_event(0, time.time(), file_version="brain.Event:2"))

    def _write(self, record):
        header = struct.pack("<Q", len(record))
        self._file.write(header + struct.pack("<I", _masked(header)) + record + struct.pack("<I", _masked(record)))

    def add_scalar(self, tag, value, step):
        summary_value = _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", float(value)))
        self._write(_event(int(step), time.time(), summary=_field(1, 2, summary_value)))

    def flush(self):
        self._file.flush()

    def close(self):
        self._file.close()


def save_checkpoint(state, directory="checkpoints", name="checkpoint.json"):
    """A JSON checkpoint (the fallback when no framework is installed); returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w") as fh:
        json.dump(state, fh)
    os.replace(path + ".tmp", path)
    return path


RESUME_ENV = "YANFLOW_RESUME_FROM"  # set by the console when it resumes a job from a checkpoint


def resume_from():
    """The checkpoint this run resumes from ($YANFLOW_RESUME_FROM, set by the console's resume), said in
    the log as ``resuming from PATH``; None for a fresh run."""
    path = os.environ.get(RESUME_ENV) or None
    if path:
        print(f"resuming from {path}", flush=True)
    return path


def checkpoint_path(by, number, ext=".json", directory="checkpoints"):
    """Where the template projects keep their checkpoints: ``checkpoints/epoch_N<ext>`` (or ``step_N``),
    one per epoch (or every few steps); the console resumes from the highest N."""
    return os.path.join(directory, f"{by}_{number}{ext}")


def save_numbered(state, by, number):
    """A JSON checkpoint ``checkpoints/<by>_<number>.json`` (the fallback when no framework is installed),
    and ``checkpoints/checkpoint.json`` kept as the latest; returns the numbered one's path."""
    path = save_checkpoint(state, name=os.path.basename(checkpoint_path(by, number)))
    save_checkpoint(state)
    return path


def number_of(path):
    """The N of a checkpoint named ``epoch_N``/``step_N`` (with any suffix); 0 when it has none."""
    digits = "".join(ch if ch.isdigit() else " " for ch in os.path.basename(path.rstrip("/"))).split()
    return int(digits[0]) if digits else 0


def load_json_checkpoint(path):
    """A JSON checkpoint's state ({} when ``path`` is not one: a framework's, read by the framework)."""
    if not path or not path.endswith(".json"):
        return {}
    with open(path) as fh:
        return json.load(fh)


def end_epoch():
    """After each checkpoint: wait $YANFLOW_EPOCH_SECONDS (0 when unset), to watch a slow run or cancel it."""
    seconds = float(os.environ.get("YANFLOW_EPOCH_SECONDS") or 0)
    if seconds > 0:
        time.sleep(seconds)


def toy_loss(step, rank):
    """A falling "loss" for the pure-Python training loop."""
    return 2.0 / (step + 1) + 0.01 * rank
