#!/usr/bin/env bash
# Dumps the fMLLR features of a speaker-adapted (SAT) Kaldi GMM into a new data dir, as Kaldi's
# steps/nnet/make_fmllr_feats.sh (same arguments): the GMM's own pipeline (apply-cmvn $cmvn_opts,
# splice-feats $splice_opts, transform-feats final.mat; add-deltas without final.mat), then with
# --transform-dir the per-speaker transforms of its trans.*, per job through $cmd
# (pybin/make_fmllr_feats.py). <data-out> gets <data-in>'s files, its own feats.scp
# (<feats-dir>/feats_fmllr_<name>.<n>.ark/.scp) and no cmvn.scp, as Kaldi's. An utterance whose
# speaker has no transform is skipped with a warning (transform-feats), counted in the logs.

# Begin configuration section.
nj=4
cmd=run.pl
transform_dir=
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v make_fmllr_feats.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 5 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <tgt-data-dir> <src-data-dir> <gmm-dir> <log-dir> <fea-dir>
 e.g.: $0 --nj 2 --transform-dir exp/tri3b_ali data-fmllr-tri3b/train data/train exp/tri3b_ali exp/make_fmllr/train fmllr
Works on CMN + (delta | LDA+MLLT) features; with --transform-dir, fMLLR on top.
Options:
  --nj <nj>                          # number of parallel jobs (default: $nj)
  --cmd <run.pl|queue.pl <args>>     # how to run jobs (default: $cmd)
  --transform-dir <dir>              # where to find fMLLR transforms (trans.*)
USAGE
  exit 1
fi

data=$1
srcdata=$2
gmmdir=$3
logdir=$4
feadir=$5

for f in "$srcdata/feats.scp" "$srcdata/cmvn.scp" "$srcdata/utt2spk"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done
if [ -f "$gmmdir/final.mat" ]; then feat_type=lda; else feat_type=delta; fi
echo "$0: feature type is $feat_type"
if [ -n "$transform_dir" ]; then
  echo "Using fMLLR transforms from $transform_dir"
  [ ! -f "$transform_dir/trans.1" ] && echo "$0: expected $transform_dir/trans.1 to exist" >&2 && exit 1
fi
[ "$(cd "$srcdata" && pwd -P)" == "$(mkdir -p "$data" && cd "$data" && pwd -P)" ] && {
  echo "$0: <tgt-data-dir> and <src-data-dir> are the same dir ($data)" >&2; exit 1; }

nj=$("$(dirname "$0")/../../utils/jobs_for_speakers.sh" "$0" "$srcdata" "$nj")
"$(dirname "$0")/../../utils/split_data.sh" "$srcdata" "$nj"
sdata=$srcdata/split$nj

mkdir -p "$logdir" "$feadir"
feadir=$(cd "$feadir" && pwd -P)  # (absolute: the scp is read from anywhere)
name=$(basename "$data")

# prepare the dir: <src-data-dir>'s files, without its features
for f in "$srcdata"/*; do [ -f "$f" ] && cp "$f" "$data/"; done
rm -f "$data/feats.scp" "$data/cmvn.scp" "$data/utt2num_frames"

$cmd JOB=1:"$nj" "$logdir/make_fmllr_feats.JOB.log" \
  make_fmllr_feats.py ${transform_dir:+--transform-dir="$transform_dir"} "$gmmdir" \
    "$sdata/JOB/utt2spk" "$sdata/JOB/cmvn.scp" "$sdata/JOB/feats.scp" \
    ark,scp:"$feadir/feats_fmllr_$name.JOB.ark","$feadir/feats_fmllr_$name.JOB.scp" \
  || { echo "$0: making fMLLR features failed; see $logdir/make_fmllr_feats.*.log" >&2; exit 1; }

# merge the scps (sorted, as a data dir must be)
for n in $(seq "$nj"); do cat "$feadir/feats_fmllr_$name.$n.scp"; done \
  | LC_ALL=C sort -k1,1 > "$data/feats.scp.tmp"
mv "$data/feats.scp.tmp" "$data/feats.scp"

nf=$(wc -l < "$data/feats.scp"); nu=$(wc -l < "$srcdata/feats.scp")
if [ "$nf" -lt "$nu" ]; then
  echo "$0: warning: fMLLR features of $nf of $nu utterances (the others' speakers have no" \
    "transform or CMVN stats: see $logdir/make_fmllr_feats.*.log); consider utils/fix_data_dir.sh $data" >&2
fi
echo "$0 finished... $srcdata -> $data ($gmmdir)"
