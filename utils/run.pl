#!/usr/bin/env perl
# utils/run.pl (and slurm.pl, queue.pl: links to this file): Kaldi's job runners, with their
# interface and log format; the name it is called by chooses the runner:
#   run.pl [--max-jobs-run N] [--gpu N] [--mem M] [--num-threads N] [--config conf] \
#         [JOB=1:N] <log-file> <command...>
#   e.g.: run.pl JOB=1:4 exp/make_mfcc/log/make_mfcc.JOB.log echo JOB
#         slurm.pl --mem 4G JOB=1:4 exp/make_mfcc/log/make_mfcc.JOB.log echo JOB
# The work is done by hybridasr/jobs/ (runner.py, cluster.py) (Python, standard library only: any
# python3 runs it, the toolkit's environment is not needed); see there for the contract.
# $HYBRIDASR_PYTHON names the interpreter (default: python3 on the PATH).
use strict;
use warnings;
use Cwd qw(abs_path);
use File::Basename qw(basename dirname);

my $prog = basename($0);  # run.pl, slurm.pl or queue.pl
my $root = dirname(dirname(abs_path($0)));
$ENV{PYTHONPATH} = (defined $ENV{PYTHONPATH} && $ENV{PYTHONPATH} ne "")
  ? "$root:$ENV{PYTHONPATH}" : $root;
my $python = $ENV{HYBRIDASR_PYTHON} || "python3";
exec { $python } $python, "-m", "hybridasr.jobs", $prog, @ARGV
  or die "$prog: cannot run $python: $!\n";
