"""TLS to the API server verified as kubectl verifies it. Python 3.13 turns on ``ssl.VERIFY_X509_STRICT``
(urllib3 follows it), which refuses a CA certificate without a keyUsage extension; kubectl (Go) accepts
one, and some cluster installers make them. ``accept_cluster_ca`` makes the REST client's HTTPS connections
start from urllib3's default context with that one flag cleared: chain, hostname and expiry are checked as
before, and the CA still comes from the kubeconfig. The exec and port-forward websockets build a plain
``SSLContext``, which never has the flag.

Each connection gets a context of its own, as urllib3 gives one when none is passed: urllib3 loads the CA
and the client's key and certificate into the context at every connect, and the reflectors, log readers
and workers connect from several threads at once. One shared context, changed under a handshake in another
thread, failed a connect with ``X509: UNKNOWN_KEY_TYPE`` now and then, or crashed the process (SIGSEGV).
"""

from __future__ import annotations

import functools
import ssl
from typing import Any


def cluster_context() -> ssl.SSLContext:
    """urllib3's default client context for verified connections, less ``VERIFY_X509_STRICT``."""
    from urllib3.util.ssl_ import create_urllib3_context

    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


@functools.cache
def cluster_pool() -> type:
    """urllib3's HTTPS pool whose connections each take a fresh ``cluster_context`` at connect."""
    from urllib3.connection import HTTPSConnection
    from urllib3.connectionpool import HTTPSConnectionPool

    class ClusterHTTPSConnection(HTTPSConnection):
        def connect(self) -> None:
            self.ssl_context = cluster_context()  # this connection's own: urllib3 loads the keys into it
            super().connect()

    class ClusterHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = ClusterHTTPSConnection

    return ClusterHTTPSConnectionPool


def accept_cluster_ca(api_client: Any) -> None:
    """Where the cluster's CA is the kubeconfig's (a file or data) and verified: the pool's own connections.
    Without a CA the system's trust store serves, through urllib3's default context, untouched."""
    configuration = api_client.configuration
    if not configuration.verify_ssl or not configuration.ssl_ca_cert:
        return
    manager = api_client.rest_client.pool_manager
    manager.pool_classes_by_scheme = {**manager.pool_classes_by_scheme, "https": cluster_pool()}
