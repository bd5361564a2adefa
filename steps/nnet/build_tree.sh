#!/usr/bin/env bash
# Builds a context-dependent (triphone) decision tree from an alignment and converts the
# alignment to it, without Kaldi and without a GMM (as in "GMM-free DNN training", Senior et
# al. 2014): what Kaldi's steps/nnet3/chain/build_tree.sh and steps/train_deltas.sh do up to
# gmm-init-model and convert-ali. <ali-dir> is any Kaldi alignment dir (ali.*.gz, final.mdl,
# num_jobs), e.g. a monophone network's from steps/nnet/align.sh. Per job, acc_tree_stats.py
# accumulates Gaussian statistics of <data>'s features (per-speaker CMVN, deltas) for every
# phone window and pdf-class of the alignment; sum_tree_stats.py adds them; build_tree.py
# clusters the phone sets into questions, grows the tree from phones/roots.int to <num-leaves>
# and clusters it (cluster-phones, compile-questions, build-tree), and writes the tree and a
# final.mdl holding its transition model; convert_ali.py converts every alignment job.
# <dir> is then an ordinary alignment dir for the new tree: tree, final.mdl, ali.JOB.gz
# (binary int32 vectors, gzip), num_jobs (that of <ali-dir>), phones.txt, questions.int,
# treeacc.npz (the summed statistics), tree_report.json, log/. steps/import_ali.sh takes it.

# Begin configuration section.
cmd=run.pl
nj=                  # jobs accumulating statistics (default: <ali-dir>/num_jobs)
stage=0              # 0: statistics, 1: tree, 2: alignment conversion
context_opts=        # e.g. "--context-width=3 --central-position=1" (the tools' defaults)
# Passed on only when given (empty: build_tree.py's default, see build_tree.py --help):
cluster_thresh=      # leaves merged after splitting while the loss is below it (-1: the
                     # smallest split's gain; 0: no clustering)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v build_tree.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 5 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <num-leaves> <data> <lang> <ali-dir> <dir>
 ... where <ali-dir> is an alignment dir (ali.*.gz, final.mdl, num_jobs), e.g. a monophone
 network's (steps/nnet/align.sh), and <data> has feats.scp and cmvn.scp.
 e.g.: $0 2000 data/train data/lang exp/mono_nnet_ali exp/tri_tree
Options:
  --cmd (run.pl|queue.pl ...)     # how to run the jobs (default: $cmd)
  --nj <nj>                       # jobs accumulating statistics (default: <ali-dir>/num_jobs)
  --stage <stage>                 # 0: statistics, 1: tree, 2: conversion (default: $stage)
  --context-opts <opts>           # e.g. "--context-width=3 --central-position=1"
  --cluster-thresh <float>        # post-clustering threshold (default: build_tree.py's, -1)
USAGE
  exit 1
fi

numleaves=$1
data=$2
lang=$3
alidir=$4
dir=$5

utils=$(cd "$(dirname "$0")/../../utils" && pwd)

for f in "$data/feats.scp" "$data/cmvn.scp" "$lang/phones.txt" "$lang/topo" \
         "$lang/phones/roots.int" "$lang/phones/sets.int" "$lang/phones/context_indep.csl" \
         "$alidir/final.mdl" "$alidir/num_jobs"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
if ! [[ $numleaves =~ ^[0-9]+$ ]] || [ "$numleaves" -lt 1 ]; then
  echo "$0: <num-leaves> must be a positive integer, got '$numleaves'" >&2
  exit 1
fi
ali_nj=$(cat "$alidir/num_jobs")
for n in $(seq "$ali_nj"); do
  [ ! -f "$alidir/ali.$n.gz" ] && echo "$0: missing file $alidir/ali.$n.gz" >&2 && exit 1
done
"$utils/lang/check_phones_compatible.sh" "$lang/phones.txt" "$alidir/phones.txt" || \
  { echo "$0: $alidir is not an alignment of $lang's phones" >&2; exit 1; }
[ -z "$nj" ] && nj=$ali_nj
ciphonelist=$(cat "$lang/phones/context_indep.csl")

mkdir -p "$dir/log"
cp "$lang/phones.txt" "$dir/phones.txt"
for f in cmvn_opts delta_opts; do
  if [ -f "$alidir/$f" ]; then cp "$alidir/$f" "$dir/$f"; else rm -f "$dir/$f"; fi
done
cmvn_opts=$(cat "$alidir/cmvn_opts" 2>/dev/null || true)
delta_opts=$(cat "$alidir/delta_opts" 2>/dev/null || true)

nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
sdata=$data/split$nj
# split_data.sh does nothing when the split is newer than every file of $data (cmvn.scp
# too, which a test of feats.scp alone missed)
"$utils/split_data.sh" "$data" $nj

# the alignments of job JOB: the same job of <ali-dir> when the splits agree, else all of
# them (each job keeps the utterances of its data split)
if [ "$nj" -eq "$ali_nj" ]; then
  ali_rspec="ark:gunzip -c $alidir/ali.JOB.gz|"
else
  ali_rspec="ark:gunzip -c $(for n in $(seq "$ali_nj"); do printf '%s ' "$alidir/ali.$n.gz"; done)|"
fi

build_opts=()
[ -n "$cluster_thresh" ] && build_opts+=("--cluster-thresh=$cluster_thresh")

if [ "$stage" -le 0 ]; then
  echo "$0: accumulating tree statistics ($nj jobs)"
  rm -f "$dir"/*.treeacc.npz "$dir/treeacc.npz"
  # shellcheck disable=SC2086
  if ! $cmd JOB=1:$nj "$dir/log/acc_tree.JOB.log" \
      acc_tree_stats.py $context_opts --ci-phones="$ciphonelist" \
        ${cmvn_opts:+--cmvn-opts="$cmvn_opts"} $delta_opts \
        "$alidir/final.mdl" "$sdata/JOB" "$ali_rspec" "$dir/JOB.treeacc.npz"; then
    echo "$0: accumulating tree statistics failed; see $dir/log/acc_tree.*.log:" >&2
    grep -ihE "error|exception" "$dir"/log/acc_tree.*.log | tail -n 3 >&2 || true
    exit 1
  fi
  accs=$(for n in $(seq "$nj"); do printf '%s ' "$dir/$n.treeacc.npz"; done)
  # shellcheck disable=SC2086
  $cmd "$dir/log/sum_tree_acc.log" sum_tree_stats.py "$dir/treeacc.npz" $accs \
    || { echo "$0: summing tree statistics failed; see $dir/log/sum_tree_acc.log" >&2; exit 1; }
  rm -f "$dir"/*.treeacc.npz
fi

if [ "$stage" -le 1 ]; then
  echo "$0: building the tree (at most $numleaves leaves)"
  # shellcheck disable=SC2086
  $cmd "$dir/log/build_tree.log" \
    build_tree.py $context_opts --max-leaves="$numleaves" ${build_opts[@]+"${build_opts[@]}"} \
      --questions-out="$dir/questions.int" --report="$dir/tree_report.json" \
      "$dir/treeacc.npz" "$lang" "$dir/tree" "$dir/final.mdl" \
    || { echo "$0: building the tree failed; see $dir/log/build_tree.log:" >&2;
         grep -E "ERROR|Error|error" "$dir/log/build_tree.log" | tail -n 3 >&2 || true; exit 1; }
fi

if [ "$stage" -le 2 ]; then
  echo "$0: converting the alignments of $alidir to the new tree ($ali_nj jobs)"
  rm -f "$dir"/ali.*.gz
  if ! $cmd JOB=1:$ali_nj "$dir/log/convert.JOB.log" \
      convert_ali.py "$alidir/final.mdl" "$dir/final.mdl" "$dir/tree" \
        "ark:gunzip -c $alidir/ali.JOB.gz|" "ark:|gzip -c > $dir/ali.JOB.gz"; then
    echo "$0: converting the alignments failed; see $dir/log/convert.*.log:" >&2
    grep -ihE "error|exception" "$dir"/log/convert.*.log | tail -n 3 >&2 || true
    exit 1
  fi
  echo "$ali_nj" > "$dir/num_jobs"
fi

read -r -d '' leaves splits gain frames <<< "$(json_get.py "$dir/tree_report.json" num_leaves \
  splits objf_gain_per_frame frames)" || true
echo "$0: built a tree of $leaves leaves ($splits splits, objective gain $gain per frame over" \
     "$frames frames) and converted the alignments into $dir"
