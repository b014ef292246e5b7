"""How an asyncssh login answers the server, as OpenSSH's own client would: ssh-agent's keys first,
then the identity files in order, each read only when its turn comes (an encrypted one asks for its
passphrase through the backend's prompter, again after a wrong one, at most ``MAX_TRIES`` times; an
OpenSSH-format one is not asked for when the KDF library it needs, bcrypt, is missing: that is said);
keyboard-interactive prompts (a one-time code) and a password through the prompter too, masked
unless the server says they echo. Keys read here stay in memory only.

``LoginClient`` records what it tried (``tried``), whether the user cancelled (``cancelled``) and
whether anyone was asked (``asked``), so the transport's error names every key path and says
"login cancelled" instead of a bare permission denied. Imported only when an SSH cluster connects
(it imports asyncssh)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncssh

from yanflow_tui.backends.prompting import CannotAsk
from yanflow_tui.errors import BackendError

log = logging.getLogger(__name__)

MAX_TRIES = 3  # passphrase and password tries, as OpenSSH's NumberOfPasswordPrompts
AGENT_TIMEOUT = 5.0  # s for ssh-agent to list its keys
OPENSSH_KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----"  # OpenSSH's own format (ssh-keygen's default): bcrypt KDF
NO_KDF = "its passphrase cannot be tried: OpenSSH-format keys need the Python package bcrypt (pip install bcrypt)"

Ask = Callable[[str, bool], Awaitable["str | None"]]


def agent_path() -> str:
    """The ssh-agent socket to use: ``$SSH_AUTH_SOCK`` ("" when unset)."""
    return os.environ.get("SSH_AUTH_SOCK", "")


_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def kdf_available() -> bool:
    """asyncssh can decrypt an OpenSSH-format key: bcrypt, with its KDF, is importable (asyncssh
    checks it once, when it is imported)."""
    from asyncssh import public_key

    try:
        import bcrypt
    except ImportError:
        return False
    return hasattr(bcrypt, "kdf") and bool(getattr(public_key, "_bcrypt_available", True))


def _needs_kdf(path: Path) -> bool:
    """The key file is in OpenSSH's own format (an encrypted one needs bcrypt's KDF)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(OPENSSH_KEY) + 64).lstrip().startswith(OPENSSH_KEY)
    except OSError:
        return False


def shown_prompt(text: str, default: str) -> str:
    """A server's prompt fit to show: escape sequences and control characters stripped, one line."""
    text = _CONTROL.sub(" ", _ESCAPE.sub("", text or ""))
    return " ".join(text.split()) or default


class LoginClient(asyncssh.SSHClient):
    """Answers one connection's authentication (see the module docstring)."""

    def __init__(self, label: str, files: list[Path], ask: Ask, agent: str = "", identities_only: bool = False):
        self.label = label
        self.identities_only = identities_only  # ~/.ssh/config IdentitiesOnly: only the agent's keys of our files
        self.ask = ask
        self.agent = agent
        self.tried: list[str] = []  # what was offered, in order: "ssh-agent (2 keys)", key paths
        self.problems: list[str] = []  # "identity file not found: PATH", "wrong passphrase for key PATH"
        self.cancelled = False
        self.error: BaseException | None = None  # why the login stopped before the server said no
        self.asked = 0  # questions put to the user
        self._files = list(files)
        self._agent_done = not agent
        self._agent_client: asyncssh.SSHAgentClient | None = None
        self._passwords = 0

    @property
    def stopped(self) -> bool:
        return self.cancelled or self.error is not None

    async def _ask(self, question: str, secret: bool) -> str | None:
        if self.stopped:
            return None
        self.asked += 1
        try:
            answer = await self.ask(question, secret)
        except CannotAsk as exc:
            self.error = exc
            return None
        if answer is None:
            self.cancelled = True
        return answer

    # -- public keys: the agent's, then each file -------------------------------------------------
    async def public_key_auth_requested(self):
        if self.stopped:
            return None
        if not self._agent_done:
            self._agent_done = True
            keys = await self._agent_keys()
            if keys:
                return keys
        while self._files:
            path = self._files.pop(0)
            key = await self._read_key(path)
            if key is not None:
                self.tried.append(str(path))
                return [key]
            if self.stopped:
                return None
        return None

    async def _agent_keys(self) -> list:
        try:
            self._agent_client = await asyncio.wait_for(asyncssh.connect_agent(self.agent), AGENT_TIMEOUT)
            if self._agent_client is None:
                raise OSError("no agent")
            keys = list(await asyncio.wait_for(self._agent_client.get_keys(), AGENT_TIMEOUT))
            if self.identities_only:
                ours = _public_data(self._files)
                keys = [key for key in keys if key.public_data in ours]
        except (OSError, ValueError, asyncio.TimeoutError, asyncssh.Error) as exc:
            log.info("ssh %s: ssh-agent at %s not used: %s", self.label, self.agent, exc or type(exc).__name__)
            self.problems.append(f"ssh-agent at {self.agent} did not answer")
            return []
        self.tried.append(f"ssh-agent ({len(keys)} key{'' if len(keys) == 1 else 's'})")
        return keys

    async def _read_key(self, path: Path):
        """The private key in ``path``, asking for its passphrase when it has one; None when it
        cannot be read (said in ``problems``) or the user cancelled."""
        try:
            return await asyncio.to_thread(asyncssh.read_private_key, path)
        except FileNotFoundError:
            self.problems.append(f"identity file not found: {path}")
            return None
        except OSError as exc:
            self.problems.append(f"cannot read identity file {path}: {exc.strerror or exc}")
            return None
        except asyncssh.KeyImportError as exc:
            if "passphrase" not in str(exc).lower():
                self.problems.append(f"not a private key: {path} ({exc})")
                return None
        if not kdf_available() and await asyncio.to_thread(_needs_kdf, path):
            self.problems.append(f"key {path}: {NO_KDF}")  # said, never asked: any passphrase would fail
            return None
        question = f"Passphrase for key {path}:"
        for _ in range(MAX_TRIES):
            passphrase = await self._ask(question, True)
            if passphrase is None:
                return None
            try:
                return await asyncio.to_thread(asyncssh.read_private_key, path, passphrase)
            except (asyncssh.KeyEncryptionError, asyncssh.KeyImportError) as exc:
                if "bcrypt" in str(exc):  # the KDF missing after all: no passphrase can be right
                    self.problems.append(f"key {path}: {NO_KDF}")
                    return None
                question = f"Wrong passphrase. Passphrase for key {path}:"
        self.problems.append(f"wrong passphrase for key {path} ({MAX_TRIES} tries)")
        return None

    # -- keyboard-interactive (one-time codes) and passwords ------------------------------------------
    def kbdint_auth_requested(self):
        return None if self.stopped else ""  # "": any submethod the server offers

    async def kbdint_challenge_received(self, name, instructions, lang, prompts):
        if not prompts:
            return []  # a message only
        note = shown_prompt(instructions, "")
        answers = []
        for index, (prompt, echo) in enumerate(prompts):
            question = shown_prompt(prompt, "Answer:")
            if index == 0 and note:
                question = f"{note} {question}"
            answer = await self._ask(question, not echo)
            if answer is None:
                return None
            answers.append(answer)
        if "keyboard-interactive" not in self.tried:
            self.tried.append("keyboard-interactive")
        return answers

    async def password_auth_requested(self):
        if self.stopped or self._passwords >= MAX_TRIES:
            return None
        self._passwords += 1
        answer = await self._ask(f"Password for {self.label}:", True)
        if answer is not None and "password" not in self.tried:
            self.tried.append("password")
        return answer

    def close_agent(self) -> None:
        if self._agent_client is not None:
            self._agent_client.close()
            self._agent_client = None

    def summary(self, files: list[Path]) -> str:
        """What was tried and what went wrong, for an error message: every key path named."""
        parts = []
        tried = self.tried or ["no key"]
        parts.append("tried " + ", ".join(tried))
        untried = [str(p) for p in files if str(p) not in self.tried and not any(str(p) in q for q in self.problems)]
        if untried:
            parts.append("not offered: " + ", ".join(untried))
        parts += self.problems
        return "; ".join(parts)


def _public_data(files: list[Path]) -> set[bytes]:
    """The public keys beside ``files`` (``PATH.pub``) that can be read."""
    found = set()
    for path in files:
        try:
            found.add(asyncssh.read_public_key(f"{path}.pub").public_data)
        except (OSError, ValueError):
            continue
    return found


def login_failed(label: str, client: LoginClient, files: list[Path], reason: str) -> BackendError:
    return BackendError(f"ssh {label}: permission denied ({reason}); {client.summary(files)}")
