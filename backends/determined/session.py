"""The connection to one Determined master: master URL and TLS settings (our config's ``cert``/
``noverify``, else what the det CLI trusts for that master: ``$DET_MASTER_CERT_FILE`` or its saved
``certs.json``), authentication (the det CLI's token cache, ``DET_USER``/``DET_PASS``/``DET_USER_TOKEN``,
or a password the UI prompts for), and SDK sessions that always carry a request timeout. A session keeps
one HTTP connection pool for its life (the SDK's own sessions open a new connection per request unless
used as a context manager), so a console holds one kept-alive connection to its master, not one per request.

Everything here is synchronous and runs in worker threads; ``determined`` is imported by the caller
(``backends/determined/backend.py``) so a missing extra is reported before this module loads it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import requests
import urllib3
from determined.common import api
from determined.common.api import authentication, bindings, certs, errors

from yanflow_tui import applog
from yanflow_tui import errors as errors_module
from yanflow_tui.errors import BackendError, BackendUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
# Idempotent reads retry 502/503/504 a little (the SDK's default is 5 tries, ~15 s); POSTs never
# retry inside urllib3 (``allowed_methods`` leaves POST out), so a submit is never sent twice here.
DEFAULT_RETRIES = urllib3.util.retry.Retry(
    total=2,
    connect=2,
    read=0,
    backoff_factor=0.2,
    status_forcelist=[502, 503, 504],
    allowed_methods=frozenset({"GET", "HEAD"}),
    raise_on_status=False,
)


class AuthRequired(errors_module.AuthRequired):
    """No usable token for this master: the UI asks for ``user``'s password and calls
    ``DeterminedBackend.login(password)``; on the command line, run ``det user login``."""

    title = "Login required"

    def __init__(self, cluster: str, user: str | None, master: str, why: str = ""):
        self.master = master
        who = f" as {user}" if user else ""
        detail = f" ({why})" if why else ""
        how = "enter the password" if user else "set user: in the config"
        super().__init__(
            cluster,
            user or "",
            f"log in to {master}{who}{detail}: {how}, run 'det -m {master} user login "
            f"{user or '<user>'}', or set DET_USER and DET_PASS",
        )


class _Timed:
    """Mixin on the SDK's sessions for the two things they cannot be told: a request timeout and a TLS
    choice that the environment cannot override. Both hook private SDK methods (checked against the
    pinned ``determined`` version, see pyproject.toml); the certificate itself comes from the SDK's own
    loader (``make_cert``), so nothing of how ``det`` picks it is redone here."""

    timeout: Any = (CONNECT_TIMEOUT, READ_TIMEOUT)

    def _make_http_session(self) -> requests.Session:
        # Needed: requests lets $REQUESTS_CA_BUNDLE/$CURL_CA_BUNDLE replace a session's ``verify`` on
        # every request (psf/requests#3829), so a ``cert``/``noverify``/certs.json choice would be lost
        # on machines that set them. Keep the session's own choice; proxies from the env still apply.
        http = super()._make_http_session()  # type: ignore[misc]
        if http.verify is not True:
            merge = http.merge_environment_settings

            def keep_verify(url, proxies, stream, verify, cert):
                settings = merge(url, proxies, stream, verify, cert)
                settings["verify"] = http.verify
                return settings

            http.merge_environment_settings = keep_verify
        return http

    def _do_request(self, method, path, params, json, data, headers, timeout, stream):
        # Needed: the generated bindings call every endpoint with ``timeout=None`` and the SDK has no
        # session-wide default, so without this a stalled master would hang a worker thread forever.
        return super()._do_request(  # type: ignore[misc]
            method, path, params, json, data, headers, timeout or self.timeout, stream
        )


class TimedSession(_Timed, api.Session):
    pass


class TimedUnauthSession(_Timed, api.UnauthSession):
    pass


def master_url(options: Mapping[str, Any], env: Mapping[str, str]) -> str:
    raw = options.get("master") or env.get("DET_MASTER")
    if not raw:
        raise BackendUnavailable("no Determined master configured: set 'master:' for the cluster or $DET_MASTER")
    try:
        return api.canonicalize_master_url(str(raw))
    except Exception as exc:
        raise BackendUnavailable(f"bad Determined master address {raw!r}: {exc}") from None


def make_cert(options: Mapping[str, Any], env: Mapping[str, str], master: str) -> certs.Cert | None:
    """TLS for ``master`` as the det CLI picks it, with our config first: ``cert`` (a PEM file to trust)
    or ``noverify: true``; else ``$DET_MASTER_CERT_FILE`` (a path, or ``noverify``); else the certificate
    ``det`` saved for this master when it was told to trust it (``certs.json`` in det's config dir). A
    certificate saved for another master is never used. ``$DET_MASTER_CERT_NAME`` names the host to
    check the certificate against in every case. ``env`` stands for os.environ (tests pass their own)."""
    name = env.get("DET_MASTER_CERT_NAME") or None
    noverify = bool(options.get("noverify"))
    path = None if noverify else (options.get("cert") or env.get("DET_MASTER_CERT_FILE"))
    if path and str(path).lower() == "noverify":
        noverify, path = True, None
    if noverify or path:
        full = str(Path(str(path)).expanduser()) if path else None
        try:
            return certs.default_load(master, explicit_path=full, explicit_cert_name=name, explicit_noverify=noverify)
        except OSError as exc:
            raise BackendUnavailable(f"cannot read the master certificate {path}: {exc.strerror or exc}") from None
    pem = saved_cert(master)
    if pem is None and name is None:
        return None
    return certs.Cert(cert_pem=pem, name=name)


def saved_cert(master: str) -> str | None:
    """The PEM chain the det CLI saved for exactly this (canonical) master URL, through the SDK's own
    store (``certs.CertStore`` at ``certs.default_store()``), or None. Plain-HTTP masters need none,
    so their store is not opened (the SDK locks and rewrites the file on every read)."""
    if not master.startswith("https://"):
        return None
    store = certs.CertStore(certs.default_store())
    try:
        return store.get_cert(master)
    except errors.CorruptCertificateCacheException:
        raise BackendUnavailable(
            f"the det CLI's certificate store {store.path} was corrupt and has been removed (by the SDK); "
            "run a det command to trust the master again, or set cert:"
        ) from None
    except OSError as exc:
        raise BackendUnavailable(
            f"cannot read the det CLI's certificate store {store.path}: {exc.strerror or exc}"
        ) from None


def describe_error(exc: BaseException, master: str) -> str:
    """One line for an SDK/requests failure, without request bodies or headers."""
    if isinstance(exc, errors.UnauthenticatedException):
        return "not logged in (the token was refused)"
    if isinstance(exc, requests.exceptions.SSLError):
        return (
            f"the TLS certificate of {master} could not be verified "
            "(set cert: to its certificate file or noverify: true, or trust it once with a det command)"
        )
    if isinstance(exc, errors.ForbiddenException):
        return f"permission denied: {exc}" if str(exc) else "permission denied"
    if isinstance(exc, errors.NotFoundException):
        return f"not found: {exc}" if str(exc) else "not found"
    if isinstance(exc, errors.MasterNotFoundException):
        return f"cannot reach the master at {master}"
    if isinstance(exc, errors.APIException):
        text = (str(exc).strip().splitlines() or [""])[0][:200]
        return f"the master answered HTTP {getattr(exc, 'status_code', '?')}: {text}".rstrip(": ")
    if is_timeout(exc):
        return f"the master at {master} did not answer in time"
    if isinstance(exc, bindings.APIHttpError):
        response = getattr(exc, "response", None)
        status = f"HTTP {response.status_code} " if response is not None else ""
        return f"the master answered {status}{exc}"
    if isinstance(exc, requests.exceptions.RequestException):
        return f"connection to the master failed ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


def is_timeout(exc: BaseException) -> bool:
    link: BaseException | None = exc
    while link is not None:
        if isinstance(link, (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)):
            return True
        link = link.__cause__ or link.__context__
    return False


def never_sent(exc: BaseException) -> bool:
    """True when the connection itself failed (refused, unresolvable, connect timeout): the
    request never left this machine."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, requests.exceptions.ConnectTimeout):
            return True
        for arg in getattr(seen, "args", ()):
            reason = getattr(arg, "reason", None)
            if isinstance(arg, urllib3.exceptions.MaxRetryError) and isinstance(
                reason,
                (
                    urllib3.exceptions.NewConnectionError,
                    urllib3.exceptions.ConnectTimeoutError,
                    urllib3.exceptions.NameResolutionError,
                ),
            ):
                return True
        seen = seen.__cause__ or seen.__context__
    return False


def is_ambiguous(exc: BaseException) -> bool:
    """True when a POST may have reached the master although no answer came back."""
    if isinstance(exc, (errors.ForbiddenException, errors.UnauthenticatedException)) or never_sent(exc):
        return False
    if isinstance(exc, errors.APIException) and not is_timeout(exc):
        return (getattr(exc, "status_code", 0) or 0) >= 500
    return isinstance(
        exc, (errors.MasterNotFoundException, errors.BadRequestException, requests.exceptions.RequestException)
    ) or is_timeout(exc)


class Connection:
    """One master, one logged-in ``Session`` (made lazily, remade after a 401)."""

    def __init__(
        self,
        cluster: str,
        options: Mapping[str, Any],
        env: Mapping[str, str] | None = None,
        retries: urllib3.util.retry.Retry | int = DEFAULT_RETRIES,
    ):
        self.cluster = cluster
        self.options = dict(options)
        self.env = env if env is not None else os.environ
        self.master = master_url(self.options, self.env)
        self._cert: certs.Cert | None = None  # read in a worker thread on first use
        self._cert_read = False
        self.retries = retries
        self._session: TimedSession | None = None
        self._lock = threading.Lock()
        self.auth_error: AuthRequired | None = None

    @property
    def cert(self) -> certs.Cert | None:
        if not self._cert_read:
            self._cert = make_cert(self.options, self.env, self.master)
            self._cert_read = True
        return self._cert

    # -- auth ---------------------------------------------------------------------------------
    def _store(self) -> authentication.TokenStore:
        return authentication.TokenStore(self.master)

    def wanted_user(self, store: authentication.TokenStore | None = None) -> str | None:
        """The user to act as: config ``user``, else ``$DET_USER``, else the det CLI's active user."""
        user = self.options.get("user") or self.env.get("DET_USER")
        if user:
            return str(user)
        return (store or self._store()).get_active_user()

    def _session_for(self, user: str, token: str) -> TimedSession:
        applog.add_secret(token)  # the log never holds a session token, whatever an error quotes
        session = TimedSession(self.master, user, token, self.cert, max_retries=self.retries)
        session._persist_http_session()
        return session

    def _token_ok(self, session: TimedSession) -> bool:
        try:
            bindings.get_GetMe(session)
            return True
        except errors.UnauthenticatedException:
            return False

    def _authenticate(self) -> TimedSession:
        store = self._store()
        user = self.wanted_user(store)
        env_user = self.env.get("DET_USER")
        if user:
            token = store.get_token(user)
            if token:
                session = self._session_for(user, token)
                if self._token_ok(session):
                    return session
        env_token = self.env.get("DET_USER_TOKEN")
        if env_token and env_user and user in (None, env_user):
            return self._session_for(env_user, env_token)
        env_pass = self.env.get("DET_PASS")
        if env_pass is not None and env_user and user in (None, env_user):
            return self._login(env_user, env_pass)
        self.probe()  # a master that cannot be reached says so; a password would not help
        raise AuthRequired(
            self.cluster, user, self.master, "the cached token expired" if user and store.get_token(user) else ""
        )

    def probe(self) -> None:
        """Raise (as the SDK does) unless the master answers at all: GET /api/v1/master, which needs
        no login. Any HTTP answer, even a refusal, means it is there."""
        try:
            bindings.get_GetMaster(TimedUnauthSession(self.master, self.cert, max_retries=0))
        except (
            errors.APIException,
            errors.ForbiddenException,
            errors.UnauthenticatedException,
            bindings.APIHttpError,
        ) as exc:
            log.debug("master info refused: %s", describe_error(exc, self.master))

    def _login(self, user: str, password: str) -> TimedSession:
        """POST /api/v1/auth/login (the SDK salts and hashes the password before sending it),
        then cache the token where ``det`` keeps it. The password itself is never stored."""
        hashed = api.salt_and_hash(password)
        applog.add_secret(password)
        applog.add_secret(hashed)
        unauth = TimedUnauthSession(self.master, self.cert, max_retries=0)
        body = bindings.v1LoginRequest(username=user, password=hashed, isHashed=True)
        try:
            answer = bindings.post_Login(unauth, body=body)
        except (errors.ForbiddenException, errors.UnauthenticatedException):
            raise AuthRequired(self.cluster, user, self.master, "wrong user name or password") from None
        self._cache_token(user, answer.token)
        log.info("logged in to %s as %s", self.master, user)
        return self._session_for(user, answer.token)

    def _cache_token(self, user: str, token: str) -> None:
        try:
            store = self._store()
            store.set_token(user, token)
            _chmod_private(store.path)
        except OSError as exc:  # a read-only home must not stop the login itself
            log.warning("could not cache the Determined token: %s", exc.strerror or exc)

    def login(self, password: str) -> None:
        """Log in as the wanted user with a password typed by the user (never written anywhere)."""
        user = (self.auth_error.user if self.auth_error else None) or self.wanted_user()
        if not user:
            raise BackendError(f"cluster {self.cluster!r}: no user to log in as; set 'user:' in the config")
        try:
            session = self._login(user, password)
        except AuthRequired as exc:
            self.auth_error = exc
            raise
        except Exception as exc:
            raise BackendError(f"cluster {self.cluster!r}: login failed: {describe_error(exc, self.master)}") from None
        with self._lock:
            self._session = session
            self.auth_error = None

    def session(self) -> TimedSession:
        with self._lock:
            if self._session is None:
                try:
                    self._session = self._authenticate()
                except AuthRequired as exc:
                    self.auth_error = exc
                    raise
                self.auth_error = None
            return self._session

    @property
    def user(self) -> str | None:
        return self._session.username if self._session is not None else None

    def connected(self) -> TimedSession:
        """``session()`` with its failures (master down, TLS) as one-line ``BackendError``s."""
        return self.call(lambda session: session, "connecting")

    def forget(self) -> None:
        """Drop the session (after a 401): the next call logs in again. Its connection pool is left
        to close when the last stream still reading through it lets go."""
        with self._lock:
            self._session = None

    def close(self) -> None:
        """Drop the session and close its connections."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    # -- calls --------------------------------------------------------------------------------
    def call(self, fn: Callable[[TimedSession], T], what: str = "request", retry_auth: bool = True) -> T:
        """Run ``fn(session)``; SDK and network errors become one-line ``BackendError``s. After a
        401 the session is remade once (a refused request did nothing, so repeating it is safe)."""
        try:
            return fn(self.session())
        except errors.UnauthenticatedException:
            self.forget()
            if not retry_auth:
                raise BackendError(f"{what}: not logged in") from None
            return self.call(fn, what, retry_auth=False)
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError(f"{what}: {describe_error(exc, self.master)}") from exc


def _chmod_private(path) -> None:
    """Mode 0600 on the SDK's token file (the SDK writes it; we only tighten it): through an fd opened
    with O_NOFOLLOW, so a symlink planted at that name is refused, never its target chmodded."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
