"""The Kubernetes backend: the official client over kubeconfig, watch caches, Jobs and multi-node manifests."""
