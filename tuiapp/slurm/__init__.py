"""Trials as Slurm jobs (``tuiapp trials PLAN --slurm``) and ``attach --slurm-job``: docs/slurm.md.

A room above ``trials/`` (it runs the plan runner's trials as jobs). One small module per job:
``launcher`` (a node's command line from the allocation), ``script`` (the batch script),
``query`` (what sbatch, squeue, scontrol and sacct print), ``jobs`` (submit, watch, cancel),
``trial`` (one trial as a job), ``runner`` (a plan with K trials in flight), ``gpu_agent`` (a
node's GPU sampler), ``preflight`` (before anything is submitted), ``attach``
(``--slurm-job``). The plan's ``[slurm]`` table is ``tuiapp.trials.slurm_spec``; the campaign
view's rows are ``tuiapp.tui.campaign_rows``.
"""
