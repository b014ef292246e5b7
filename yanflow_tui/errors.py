"""The exceptions that reach users. Each carries a message fit to show as it is."""

from __future__ import annotations


class YanflowError(Exception):
    """Base for errors shown to the user as one clear message, never a traceback."""

    title = "Error"


class ReadOnlyError(YanflowError):
    """A mutating call was refused by the read-only gate, before any I/O."""

    title = "Read-only"


class BackendError(YanflowError):
    """A backend could not do what was asked (bad job id, refused submit, lost connection)."""

    title = "Backend error"


class NotOffered(BackendError):
    """The cluster has no such thing for its jobs at all (its backend says why: ``Capabilities.no_shell``)."""

    title = "Not offered"


class BackendUnavailable(BackendError):
    """The backend cannot be used at all here (missing extra, not built yet)."""

    title = "Unavailable"


class AuthRequired(BackendError):
    """The cluster needs a password (no cached token, no env credentials). The console asks for it
    and hands it to ``Backend.login``; it is never written to disk or to a log. With ``asks``, the
    backend asks its own questions (an SSH login's one-time code): ``Backend.retry_login`` starts it
    again, only when the user says so."""

    title = "Login required"

    def __init__(self, cluster: str, user: str, message: str = "", asks: bool = False):
        self.cluster = cluster
        self.user = user
        self.asks = asks
        super().__init__(message or f"cluster {cluster!r} needs the password of user {user!r}")


class LoginInTerminal(BackendError):
    """The cluster logs in in the real terminal (``Backend.terminal_login``: an OpenSSH master that asks
    for a one-time code, a passphrase, Kerberos...) and is not logged in now. The console offers the
    login key, which suspends it and runs that login; nothing ever prompts from inside the console."""

    title = "Login required"


class ConfigError(YanflowError):
    """The config file or command line is wrong."""

    title = "Config error"


class SpecError(YanflowError):
    """One or more located problems in a YAML document (job spec or config).

    ``problems`` is a list of ``(file, line, field, message)``; ``str()`` gives one line per problem
    in the form ``file:line: field: message``.
    """

    title = "Invalid spec"

    def __init__(self, problems: list[tuple[str, int, str, str]]):
        self.problems = problems
        super().__init__("\n".join(format_problem(*p) for p in problems))


class UIConfigError(SpecError):
    """A config's ``theme:`` or ``keymap:`` the console refuses (an unknown name, a key taken): every
    command reports it alike, the console and the headless ones, and exits 2 (a usage error)."""

    title = "Invalid config"


def _shown(text: str) -> str:
    """``text`` fit for one line of a terminal: characters that do not print (controls, lone
    surrogates from undecodable file names, line breaks) as ``\\uXXXX`` escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else f"\\u{ord(c):04x}" for c in text)


def format_problem(file: str, line: int, field: str, message: str) -> str:
    file, field, message = _shown(file), _shown(field), _shown(message)
    where = f"{file}:{line}" if line else file
    return f"{where}: {field}: {message}" if field else f"{where}: {message}"


class SubmitUnknown(BackendError):
    """A submit was sent but its outcome could not be learned: the answer was lost (dropped
    connection, timeout, no job id) and the lookup by ``tag`` found no job in time. The job may
    exist. Submitting again with the same ``tag`` looks it up first and sends only if none holds it."""

    title = "Submit outcome unknown"

    def __init__(self, cluster: str, tag: str, why: str = ""):
        self.cluster = cluster
        self.tag = tag
        self.why = why
        because = f" ({why})" if why else ""
        super().__init__(
            f"unknown: check tag {tag} on cluster {cluster!r}: sent, but no job was found by "
            f"the tag{because}; a retry with this tag looks it up first"
        )
