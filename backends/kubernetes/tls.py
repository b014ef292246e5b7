"""TLS to the API server verified as kubectl verifies it. Python 3.13 turns on ``ssl.VERIFY_X509_STRICT``
(urllib3 follows it), which refuses a CA certificate without a keyUsage extension; kubectl (Go) accepts
one, and some cluster installers make them. ``accept_cluster_ca`` hands the REST client's connection pool
one SSL context of its own, urllib3's default with that one flag cleared: chain, hostname and expiry are
checked as before, and the CA still comes from the kubeconfig. The exec and port-forward websockets build
a plain ``SSLContext``, which never has the flag.
"""

from __future__ import annotations

import ssl
from typing import Any


def cluster_context() -> ssl.SSLContext:
    """urllib3's default client context for verified connections, less ``VERIFY_X509_STRICT``."""
    from urllib3.util.ssl_ import create_urllib3_context

    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def accept_cluster_ca(api_client: Any) -> None:
    """Where the cluster's CA is the kubeconfig's (a file or data) and verified: the pool's own context.
    Without a CA the system's trust store serves, through urllib3's default context, untouched."""
    configuration = api_client.configuration
    if not configuration.verify_ssl or not configuration.ssl_ca_cert:
        return
    api_client.rest_client.pool_manager.connection_pool_kw["ssl_context"] = cluster_context()
