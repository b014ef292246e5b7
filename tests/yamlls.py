"""A small Language Server Protocol client that drives the REAL YAML language server (Red Hat's
``yaml-language-server``, the checker of VS Code's YAML extension, Neovim's ``yamlls``, Helix and Zed) as an
editor does: JSON-RPC over its stdio with ``Content-Length`` framing; ``initialize``, the settings an editor
sends (``workspace/didChangeConfiguration``), ``textDocument/didOpen``, then the ``publishDiagnostics`` the
server pushes and ``textDocument/completion``.

``scripts/outside-tools-setup`` installs the server from the npm registry into ``YLS_DIR`` (scripts/test.sh
calls it). Tests FAIL, never skip, when it (or node) is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

YLS_DIR = Path(os.environ.get("YANFLOW_YLS_DIR", "/tmp/yanflow-yls"))
SERVER = YLS_DIR / "node_modules" / "yaml-language-server" / "bin" / "yaml-language-server"
MISSING = "the YAML language server is not installed (or node): run scripts/outside-tools-setup (scripts/test.sh does)"
# What an editor sends: checking, completion and hover on; no download of the Schema Store's catalog
# (a schema comes from the file's own `$schema` line, or from `schemas`).
SETTINGS = {"validate": True, "completion": True, "hover": True, "schemaStore": {"enable": False}}


class LanguageServer:
    """One server process; ``request`` waits for its answer, ``diagnostics`` for the list it pushes for a buffer."""

    def __init__(self, root: Path, log: Path):
        node = shutil.which("node")
        if node is None or not SERVER.is_file():
            pytest.fail(MISSING, pytrace=False)
        self.log = log
        self._stderr = log.open("wb")
        self.process = subprocess.Popen(
            [node, str(SERVER), "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )
        self.root = root
        self.settings: dict[str, Any] = dict(SETTINGS)  # the `yaml` section, as the editor's settings hold it
        self._changed = threading.Condition()  # notified at each answer and each list of diagnostics
        self._writing = threading.Lock()  # the reader thread answers the server's requests: one frame at a time
        self._next = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self._published: dict[str, list[list[dict[str, Any]]]] = {}  # uri -> every list pushed, in order
        self._opened: set[str] = set()  # each once: a list published for a buffer then belongs to it alone
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    # -- the wire --------------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        with self._writing:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if not line:
                return  # the server exited
            self._receive(json.loads(stream.read(length)))

    def _receive(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # the server asks (registerCapability, configuration...)
            items = message.get("params", {}).get("items", [])  # workspace/configuration: a value per section
            result = [self.settings if i.get("section") == "yaml" else None for i in items] if items else None
            self._send({"id": message["id"], "result": result})
        elif "id" in message:
            with self._changed:
                self._answers[message["id"]] = message
                self._changed.notify_all()
        elif message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            with self._changed:
                self._published.setdefault(params["uri"], []).append(params["diagnostics"])
                self._changed.notify_all()

    def _wait(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        """Until ``condition()`` (read under the lock) is truthy, woken by each message the server sends."""
        with self._changed:
            found = self._changed.wait_for(lambda: condition() or self.process.poll() is not None, timeout)
            value = condition()
        if not value:
            why = f"the server exited ({self.process.returncode})" if found else f"none in {timeout} s"
            raise AssertionError(f"waited for {what}: {why}; its log: {self.log}")
        return value

    # -- what an editor does ---------------------------------------------------------------------------
    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float = 30) -> Any:
        with self._changed:
            self._next += 1
            ident = self._next
        self._send({"id": ident, "method": method, "params": params})
        answer = self._wait(lambda: self._answers.get(ident), timeout, f"the answer to {method}")
        assert "error" not in answer, answer
        return answer.get("result")

    def start(self, settings: dict[str, Any]) -> None:
        uri = self.root.as_uri()
        capabilities = {
            "workspace": {"configuration": True},
            "textDocument": {"publishDiagnostics": {}, "completion": {"completionItem": {}}},
        }
        self.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": uri, "capabilities": capabilities, "workspaceFolders": None},
        )
        self.notify("initialized", {})
        # The server is told that the settings changed, and asks for them (workspace/configuration).
        self.settings.update(settings)
        self.notify("workspace/didChangeConfiguration", {"settings": {"yaml": self.settings}})

    def open(self, path: Path, text: str | None = None) -> str:
        """Open ``path`` (its text, or ``text`` as the editor's buffer); returns its URI."""
        uri = path.resolve().as_uri()
        assert uri not in self._opened, f"{uri} is open already: open another (an unsaved buffer beside it)"
        self._opened.add(uri)
        body = path.read_text(encoding="utf-8") if text is None else text
        self.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": body}}
        )
        return uri

    def diagnostics(self, uri: str, timeout: float = 30) -> list[dict[str, Any]]:
        """The diagnostics the server published for ``uri`` (waits for its first list)."""
        lists = self._wait(lambda: self._published.get(uri), timeout, f"diagnostics for {uri}")
        return lists[-1]

    def completion(self, uri: str, line: int, character: int) -> list[str]:
        """The labels the server offers at that position."""
        result = self.request(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
        )
        items = result.get("items", []) if isinstance(result, dict) else result or []
        return [item["label"] for item in items]

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=10)
            self.notify("exit", {})
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._stderr.close()


@contextmanager
def language_server(root: Path, log: Path, **settings: Any) -> Iterator[LanguageServer]:
    """A started server (``settings``: more of the ``yaml`` section, e.g. ``schemas``), shut down after."""
    server = LanguageServer(root, log)
    try:
        server.start(settings)
        yield server
    finally:
        server.close()
