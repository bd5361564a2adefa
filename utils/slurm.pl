#!/usr/bin/env python3
# utils/slurm.pl: Kaldi's slurm.pl job runner (same interface), written in Python (stdlib only).
#   slurm.pl [--max-jobs-run N] [--gpu N] [--mem M] [--num-threads N] [--config conf] \
#         [JOB=1:N] <log-file> <command...>
#   e.g.: slurm.pl JOB=1:4 exp/make_mfcc/log/make_mfcc.JOB.log echo JOB
# See hybridasr/kaldi/job_runner.py for the contract.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
from hybridasr.kaldi.job_runner import Slurm, main_cluster  # noqa: E402

if __name__ == "__main__":
    sys.exit(main_cluster(Slurm()))
