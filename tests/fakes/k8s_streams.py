"""The API emulator's websocket subresources of a pod, as the official client speaks them.

- ``exec`` (``v4.channel.k8s.io``, else ``channel.k8s.io``): every frame starts with its channel byte:
  stdin 0 (client to server), stdout 1, stderr 2, error 3 (the last frame: a ``Status`` JSON, with the
  exit code in ``details.causes`` when it is not 0), resize 4 (``{"Width": W, "Height": H}``). The
  command runs for real on this machine, in the pod's root folder (``root(namespace, pod)``, a temp
  folder unless a test seeds one) with ``HOSTNAME`` set to the pod's name; with ``tty=true`` it runs in
  a real pseudo-terminal, which resize frames resize.
- ``portforward`` (``portforward.k8s.io``, else ``v4.channel.k8s.io``): per port asked, a data channel
  (2i) and an error channel (2i+1); the first frame of each carries only the port, 2 bytes little-
  endian. Data goes to a real local TCP port a test maps (``map_port``), or, for a pod whose network a
  test shares (``share_ports``: a server its exec started listens on this machine), to the same port
  here; a port with none mapped, or whose connection is refused, gets its error on the error channel.

Fault switches: ``cut_after(n)`` drops the first exec connection whose stdout passes ``n`` bytes, there;
``refuse_exec(code, message)`` answers every exec handshake after it with that HTTP error and a ``Status``
(as the API server answers a user whom RBAC denies ``pods/exec``): the websocket upgrade never happens.
Each exec is recorded in ``execs`` as (namespace, pod, container, command, tty).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import shutil
import struct
import tempfile
import termios
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
EXEC_PROTOCOLS = ("v4.channel.k8s.io", "channel.k8s.io")
FORWARD_PROTOCOLS = ("portforward.k8s.io", "v4.channel.k8s.io")
CHUNK = 32 * 1024


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _failure(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body.update({"message": message, "reason": reason, "code": code})
    return web.json_response(body, status=code)


def _containers(pod: dict) -> list[str]:
    return [c.get("name", "main") for c in (pod.get("spec") or {}).get("containers") or ()] or ["main"]


class PodStreams:
    """Exec and port-forward for one emulator (``emulator.streams``)."""

    def __init__(self, emulator: Any) -> None:
        self.emulator = emulator
        self.roots: dict[tuple[str, str], Path] = {}
        self.ports: dict[tuple[str, str, int], int] = {}  # (namespace, pod, pod port) -> local port
        self.shared: set[tuple[str, str]] = set()  # pods whose every port is the same port here
        self.execs: list[tuple[str, str, str, tuple[str, ...], bool]] = []
        self.forwards: list[tuple[str, str, tuple[int, ...]]] = []
        self._cut: int | None = None
        self._refusal: tuple[int, str] | None = None
        self._temp: tempfile.TemporaryDirectory[str] | None = None

    # -- from tests ------------------------------------------------------------------------------
    def root(self, namespace: str, pod: str) -> Path:
        """The folder the pod's commands run in (created on first use)."""
        key = (namespace, pod)
        if key not in self.roots:
            if self._temp is None:
                self._temp = tempfile.TemporaryDirectory(prefix="k8s-pods-")
            self.roots[key] = Path(self._temp.name) / f"{namespace}.{pod}"
            self.roots[key].mkdir(parents=True, exist_ok=True)
        return self.roots[key]

    def set_root(self, namespace: str, pod: str, path: Path) -> None:
        self.roots[(namespace, pod)] = path

    def map_port(self, namespace: str, pod: str, port: int, local_port: int) -> None:
        self.ports[(namespace, pod, port)] = local_port

    def share_ports(self, namespace: str, pod: str) -> None:
        self.shared.add((namespace, pod))

    def cut_after(self, nbytes: int) -> None:
        self._cut = nbytes

    def refuse_exec(self, code: int, message: str) -> None:
        self._refusal = (code, message)

    # -- exec ------------------------------------------------------------------------------------
    async def exec(self, request: web.Request, namespace: str, name: str, pod: dict) -> web.StreamResponse:
        q = request.query
        command = tuple(q.getall("command", []))
        names = _containers(pod)
        container = q.get("container") or ""
        if self._refusal is not None:
            code, message = self._refusal
            return _failure(code, "Forbidden" if code == 403 else "BadRequest", message)
        if not command:
            return _failure(400, "BadRequest", "you must specify at least 1 command")
        if not container and len(names) > 1:
            return _failure(400, "BadRequest", f"a container name must be specified for pod {name}")
        container = container or names[0]
        if container not in names:
            return _failure(400, "BadRequest", f"container {container} is not valid for pod {name}")
        if ((pod.get("status") or {}).get("phase") or "Pending") != "Running":
            return _failure(400, "BadRequest", f"pod {name} is not running")
        tty = _truthy(q.get("tty"))
        self.execs.append((namespace, name, container, command, tty))
        ws = web.WebSocketResponse(protocols=EXEC_PROTOCOLS)
        await ws.prepare(request)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root(namespace, name)),
            "HOSTNAME": name,
            "LANG": "C.UTF-8",
        }
        if tty:
            env["TERM"] = "xterm"
        try:
            if tty:
                code = await self._run_tty(ws, command, namespace, name, env)
            else:
                code = await self._run_pipes(request, ws, command, namespace, name, env, _truthy(q.get("stdin")))
        except FileNotFoundError:
            await self._send_status(ws, None, f"exec: {command[0]}: executable file not found in $PATH")
            return ws
        if code is not None:
            await self._send_status(ws, code)
        await ws.close()
        return ws

    async def _send_status(self, ws: web.WebSocketResponse, code: int | None, message: str = "") -> None:
        if ws.closed:
            return
        if code == 0:
            body: dict[str, Any] = {"metadata": {}, "status": "Success"}
        elif code is None:
            body = {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError"}
            body["details"] = {"causes": [{"message": message}]}
        else:
            body = {
                "metadata": {},
                "status": "Failure",
                "message": f"command terminated with non-zero exit code: exit status {code}",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
            }
        await ws.send_bytes(bytes([ERROR]) + json.dumps(body).encode())

    async def _run_pipes(
        self, request: web.Request, ws, command, namespace: str, name: str, env: dict, stdin: bool
    ) -> int | None:
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=self.root(namespace, name),
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        sent = 0
        dropped = False

        async def pump(stream: asyncio.StreamReader, channel: int) -> None:
            nonlocal sent, dropped
            while data := await stream.read(CHUNK):
                cut = self._cut
                if channel == STDOUT and cut is not None:
                    if sent + len(data) >= cut:
                        self._cut = None
                        await ws.send_bytes(bytes([channel]) + data[: cut - sent])
                        dropped = True
                        await asyncio.sleep(0.05)  # what went before the drop reaches the client first
                        if request.transport is not None:
                            request.transport.abort()
                        return
                    sent += len(data)
                if not ws.closed:
                    await ws.send_bytes(bytes([channel]) + data)

        async def feed() -> None:
            async for msg in ws:
                if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                    continue
                data = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
                if data[:1] == bytes([STDIN]) and proc.stdin is not None:
                    proc.stdin.write(data[1:])
                    with contextlib.suppress(ConnectionError):
                        await proc.stdin.drain()
            if proc.returncode is None:  # the client went away: so does the command
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()

        feeder = asyncio.ensure_future(feed())
        assert proc.stdout is not None and proc.stderr is not None
        ended = False
        try:
            await asyncio.gather(pump(proc.stdout, STDOUT), pump(proc.stderr, STDERR))
            ended = not dropped
        finally:  # dropped, or cancelled with the connection: the command goes too
            feeder.cancel()
            if not ended:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                with contextlib.suppress(Exception):
                    await proc.communicate()  # what it wrote after the cut, so its pipes close
            code = await proc.wait()
        return code if ended else None

    async def _run_tty(self, ws, command, namespace: str, name: str, env: dict) -> int | None:
        master, slave = pty.openpty()
        argv = ["setsid", "-c", *command] if shutil.which("setsid") else list(command)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=self.root(namespace, name), env=env, stdin=slave, stdout=slave, stderr=slave
            )
        finally:
            os.close(slave)
        loop = asyncio.get_running_loop()
        output: asyncio.Queue[bytes] = asyncio.Queue()

        def readable() -> None:
            try:
                data = os.read(master, CHUNK)
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(master)
            output.put_nowait(data)

        loop.add_reader(master, readable)

        async def pump() -> None:
            while data := await output.get():
                if not ws.closed:
                    await ws.send_bytes(bytes([STDOUT]) + data)

        async def feed() -> None:
            async for msg in ws:
                if msg.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                    continue
                data = msg.data if isinstance(msg.data, bytes) else msg.data.encode()
                if data[:1] == bytes([STDIN]):
                    os.write(master, data[1:])
                elif data[:1] == bytes([RESIZE]):
                    size = json.loads(data[1:])
                    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", size["Height"], size["Width"], 0, 0))
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()

        feeder = asyncio.ensure_future(feed())
        pumping = asyncio.ensure_future(pump())
        code = await proc.wait()
        await pumping  # the pty's end (EIO once every holder of the slave has gone)
        loop.remove_reader(master)
        os.close(master)
        feeder.cancel()
        return code

    # -- port-forward ------------------------------------------------------------------------------
    async def portforward(self, request: web.Request, namespace: str, name: str, pod: dict) -> web.StreamResponse:
        try:
            ports = tuple(int(p) for p in request.query.get("ports", "").split(",") if p)
        except ValueError:
            return _failure(400, "BadRequest", "invalid port")
        if not ports:
            return _failure(400, "BadRequest", "you must specify at least 1 port")
        if ((pod.get("status") or {}).get("phase") or "Pending") != "Running":
            return _failure(400, "BadRequest", f"pod {name} is not running")
        self.forwards.append((namespace, name, ports))
        ws = web.WebSocketResponse(protocols=FORWARD_PROTOCOLS)
        await ws.prepare(request)
        writers: dict[int, asyncio.StreamWriter] = {}
        pumps = []

        async def pump(index: int, reader: asyncio.StreamReader) -> None:
            while data := await reader.read(CHUNK):
                if ws.closed:
                    return
                await ws.send_bytes(bytes([2 * index]) + data)

        for index, port in enumerate(ports):
            prefix = port.to_bytes(2, "little")
            await ws.send_bytes(bytes([2 * index]) + prefix)
            await ws.send_bytes(bytes([2 * index + 1]) + prefix)
            local = self.ports.get((namespace, name, port), port if (namespace, name) in self.shared else None)
            error = f"error forwarding port {port} to pod {name}: no such port"
            if local is not None:
                try:
                    reader, writer = await asyncio.open_connection("127.0.0.1", local)
                except OSError as exc:
                    error = f"error forwarding port {port} to pod {name}: {exc.strerror or exc}"
                else:
                    writers[index] = writer
                    pumps.append(asyncio.ensure_future(pump(index, reader)))
                    continue
            await ws.send_bytes(bytes([2 * index + 1]) + error.encode())

        async def feed() -> None:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY or not msg.data:
                    continue
                channel, data = msg.data[0], msg.data[1:]
                writer = writers.get(channel // 2)
                if channel % 2 == 0 and writer is not None and data:
                    writer.write(data)
                    with contextlib.suppress(ConnectionError):
                        await writer.drain()

        feeder = asyncio.ensure_future(feed())
        if pumps:
            remote = asyncio.ensure_future(asyncio.gather(*pumps))
            await asyncio.wait([feeder, remote], return_when=asyncio.FIRST_COMPLETED)
        else:
            await feeder
        feeder.cancel()
        for task in pumps:
            task.cancel()
        for writer in writers.values():
            writer.close()
        await ws.close()
        return ws
