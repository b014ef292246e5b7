"""The local backend: this machine as one node, jobs run by a detached scheduler, GPUs read through NVML."""
