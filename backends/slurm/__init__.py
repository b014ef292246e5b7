"""The Slurm backend: squeue, sinfo, sacct and sbatch over SSH to a login node, or run locally on one."""
