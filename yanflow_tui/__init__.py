"""YanFlow TUI: one keyboard-driven console over local, Slurm, Kubernetes and Determined clusters.

This package must stay cheap to import: the local job runner imports it too.
"""

__version__ = "0.1.0"
