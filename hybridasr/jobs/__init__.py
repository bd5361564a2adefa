"""Kaldi's job runners without Kaldi: ``utils/run.pl`` (local, parallel jobs) and its cluster
siblings ``slurm.pl`` and ``queue.pl`` (links to it, chosen by name), run as
``python3 -m hybridasr.jobs <run.pl|slurm.pl|queue.pl> [args...]``. Standard library only, and
nothing else of hybridasr imported, so any ``python3`` runs it without the toolkit's
environment.

- ``runner``: the command line (``JOB=1:N``, the log file, options), the local runner;
- ``cluster``: Slurm and Grid Engine submission on top of it.
"""
