"""Runs carried out by Slurm: one run = one batch job (docs/SLURM.md).

``settings`` (partition, account, QoS, resources, limits: environment or a TOML file),
``script`` (the sbatch options and the batch script for a run: pure functions), ``commands``
(sbatch, scontrol, scancel as subprocesses, their answers parsed), ``states`` (what a job's
state means for its run), ``submit`` (store the run, hand it to Slurm), ``job`` (the batch
job's side: claim exactly its run and measure it), ``reconcile`` (Slurm's view against the runs
table, so no run outlives its job), ``cli`` (``python -m engine slurm ...``).

Torch-free: the dashboard imports it to submit, cancel and show jobs.
"""
