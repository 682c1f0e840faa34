"""Trials as Slurm jobs (``tuiapp trials PLAN --slurm``) and ``attach --slurm-job``: docs/slurm.md.

One small module per job: ``spec`` (the plan's ``[slurm]`` table), ``launcher`` (a node's
command line from the allocation), ``script`` (the batch script), ``query`` (what sbatch,
squeue, scontrol and sacct print), ``jobs`` (submit, watch, cancel), ``trial`` (one trial as a
job), ``runner`` (a plan with K trials in flight), ``gpu_agent`` (a node's GPU sampler),
``preflight`` (before anything is submitted), ``attach`` (``--slurm-job``), ``campaign_view``
(the campaign's table).
"""
