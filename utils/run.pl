#!/usr/bin/env python3
# utils/run.pl: Kaldi's run.pl job runner (same interface), written in Python (stdlib only).
#   run.pl [--max-jobs-run N] [--gpu N] [--mem M] [--num-threads N] [--config conf] \
#         [JOB=1:N] <log-file> <command...>
#   e.g.: run.pl JOB=1:4 exp/make_mfcc/log/make_mfcc.JOB.log echo JOB
# See hybridasr/kaldi/job_runner.py for the contract.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
from hybridasr.kaldi.job_runner import main_local  # noqa: E402

if __name__ == "__main__":
    sys.exit(main_local(prog="run.pl"))
