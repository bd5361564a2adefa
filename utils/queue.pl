#!/usr/bin/env perl
# utils/queue.pl: Kaldi's queue.pl, with its interface and log format:
#   queue.pl [--max-jobs-run N] [--gpu N] [--mem M] [--num-threads N] [--config conf] \
#         [JOB=1:N] <log-file> <command...>
#   e.g.: queue.pl JOB=1:4 exp/make_mfcc/log/make_mfcc.JOB.log echo JOB
# The work is done by hybridasr/kaldi/job_runner.py (Python, standard library only: any
# python3 runs it, the toolkit's environment is not needed); see there for the contract.
# $HYBRIDASR_PYTHON names the interpreter (default: python3 on the PATH).
use strict;
use warnings;
use Cwd qw(abs_path);
use File::Basename qw(dirname);

my $root = dirname(dirname(abs_path($0)));
$ENV{PYTHONPATH} = (defined $ENV{PYTHONPATH} && $ENV{PYTHONPATH} ne "")
  ? "$root:$ENV{PYTHONPATH}" : $root;
my $python = $ENV{HYBRIDASR_PYTHON} || "python3";
exec { $python } $python, "-m", "hybridasr.kaldi.job_runner", "queue.pl", @ARGV
  or die "queue.pl: cannot run $python: $!\n";
