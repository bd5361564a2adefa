#!/usr/bin/env bash
# Builds the tree of a chain model, as Kaldi's steps/nnet3/chain/build_tree.sh: the alignment
# of <ali-dir> is converted to a monophone model of <lang>'s topology (the chain topology of
# chain_gen_topo.py: data/lang_chain) at the subsampled frame rate (convert_ali.py
# --frame-subsampling-factor), tree statistics are accumulated on it with the features
# subsampled alike (acc_tree_stats.py; per-speaker CMVN and deltas as the alignment dir's),
# the tree is built on the chain topology (build_tree.py: each leaf is asked about the
# pdf-class too, so a phone's forward and self-loop pdfs may differ) and the alignment is
# converted to it. <num-leaves> may be "auto": chain_num_leaves.py's rule from the data size.
# <dir> gets tree, final.mdl (the transition model, Kaldi's format), ali.JOB.gz (at the
# subsampled rate), num_jobs, frame_subsampling_factor, phones.txt, tree_report.json, log/.

# Begin configuration section.
cmd=run.pl
stage=0                      # 0: monophone model, 1: statistics, 2: tree, 3: conversion
frame_subsampling_factor=1   # chain recipes: 3
context_opts=                # e.g. "--context-width=2 --central-position=1"
cluster_thresh=              # build_tree.py's --cluster-thresh (empty: its default)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v build_tree.py >/dev/null 2>&1 || . "$(dirname "$0")/../../../path.sh"
. "$(dirname "$0")/../../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 5 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <num-leaves|auto> <data> <lang> <ali-dir> <dir>
 ... where <lang> has the chain topology (chain_gen_topo.py --lang-in=data/lang
 --lang-out=data/lang_chain) and <ali-dir> is an alignment dir (ali.*.gz, final.mdl, num_jobs).
 e.g.: $0 --frame-subsampling-factor 3 auto data/train data/lang_chain exp/tri1_ali exp/chain/tree
Options:
  --cmd (run.pl|queue.pl ...)        # how to run the jobs (default: $cmd)
  --stage <stage>                    # 0 mono model, 1 stats, 2 tree, 3 conversion (default: $stage)
  --frame-subsampling-factor <n>     # frame rate reduction of the chain model (default: $frame_subsampling_factor)
  --context-opts <opts>              # e.g. "--context-width=3 --central-position=1"
  --cluster-thresh <float>           # post-clustering threshold (default: build_tree.py's)
USAGE
  exit 1
fi

numleaves=$1
data=$2
lang=$3
alidir=$4
dir=$5

utils=$(cd "$(dirname "$0")/../../../utils" && pwd)

for f in "$data/feats.scp" "$data/cmvn.scp" "$lang/phones.txt" "$lang/topo" \
         "$lang/phones/roots.int" "$lang/phones/sets.int" "$lang/phones/context_indep.csl" \
         "$alidir/final.mdl" "$alidir/num_jobs"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
if [ "$numleaves" != auto ] && { ! [[ $numleaves =~ ^[0-9]+$ ]] || [ "$numleaves" -lt 1 ]; }; then
  echo "$0: <num-leaves> must be a positive integer or auto, got '$numleaves'" >&2
  exit 1
fi
if ! [[ $frame_subsampling_factor =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: --frame-subsampling-factor must be a positive integer" >&2
  exit 1
fi
nj=$(cat "$alidir/num_jobs")
for n in $(seq "$nj"); do
  [ ! -f "$alidir/ali.$n.gz" ] && echo "$0: missing file $alidir/ali.$n.gz" >&2 && exit 1
done
"$utils/lang/check_phones_compatible.sh" "$lang/phones.txt" "$alidir/phones.txt" || \
  { echo "$0: $alidir is not an alignment of $lang's phones" >&2; exit 1; }
ciphonelist=$(cat "$lang/phones/context_indep.csl")
fsf=$frame_subsampling_factor

mkdir -p "$dir/log"
cp "$lang/phones.txt" "$dir/phones.txt"
for f in cmvn_opts delta_opts; do
  if [ -f "$alidir/$f" ]; then cp "$alidir/$f" "$dir/$f"; else rm -f "$dir/$f"; fi
done
cmvn_opts=$(cat "$alidir/cmvn_opts" 2>/dev/null || true)
delta_opts=$(cat "$alidir/delta_opts" 2>/dev/null || true)
"$utils/split_data.sh" "$data" "$nj"
sdata=$data/split$nj

if [ "$stage" -le 0 ]; then
  echo "$0: initializing a monophone model of $lang/topo (for the alignment conversion)"
  $cmd "$dir/log/init_mono.log" \
    init_mono.py --shared-phones="$lang/phones/sets.int" "$lang/topo" "$dir/mono.mdl" \
      "$dir/mono.tree"
fi

if [ "$stage" -le 1 ]; then
  echo "$0: accumulating tree statistics at frame subsampling factor $fsf ($nj jobs)"
  rm -f "$dir"/*.treeacc.npz "$dir/treeacc.npz"
  # shellcheck disable=SC2086
  if ! $cmd JOB=1:$nj "$dir/log/acc_tree.JOB.log" \
      convert_ali.py --frame-subsampling-factor="$fsf" "$alidir/final.mdl" "$dir/mono.mdl" \
        "$dir/mono.tree" "ark:gunzip -c $alidir/ali.JOB.gz|" "ark:$dir/mono_ali.JOB.ark" \
      '&&' acc_tree_stats.py $context_opts --ci-phones="$ciphonelist" \
        --frame-subsampling-factor="$fsf" ${cmvn_opts:+--cmvn-opts="$cmvn_opts"} $delta_opts \
        "$dir/mono.mdl" "$sdata/JOB" "ark:$dir/mono_ali.JOB.ark" "$dir/JOB.treeacc.npz"; then
    echo "$0: accumulating tree statistics failed; see $dir/log/acc_tree.*.log" >&2
    exit 1
  fi
  rm -f "$dir"/mono_ali.*.ark
  accs=$(for n in $(seq "$nj"); do printf '%s ' "$dir/$n.treeacc.npz"; done)
  # shellcheck disable=SC2086
  $cmd "$dir/log/sum_tree_acc.log" sum_tree_stats.py "$dir/treeacc.npz" $accs
  rm -f "$dir"/*.treeacc.npz
fi

if [ "$numleaves" = auto ]; then
  numleaves=$(chain_num_leaves.py --frame-subsampling-factor="$fsf" "$dir/treeacc.npz")
  echo "$0: number of leaves from the data size: $numleaves"
fi

if [ "$stage" -le 2 ]; then
  echo "$0: building the tree (at most $numleaves leaves)"
  build_opts=()
  [ -n "$cluster_thresh" ] && build_opts+=("--cluster-thresh=$cluster_thresh")
  # shellcheck disable=SC2086
  $cmd "$dir/log/build_tree.log" \
    build_tree.py $context_opts --max-leaves="$numleaves" ${build_opts[@]+"${build_opts[@]}"} \
      --questions-out="$dir/questions.int" --report="$dir/tree_report.json" \
      "$dir/treeacc.npz" "$lang" "$dir/tree" "$dir/final.mdl" \
    || { echo "$0: building the tree failed; see $dir/log/build_tree.log" >&2; exit 1; }
fi

if [ "$stage" -le 3 ]; then
  echo "$0: converting the alignments of $alidir to the tree at frame subsampling factor $fsf"
  rm -f "$dir"/ali.*.gz
  $cmd JOB=1:$nj "$dir/log/convert.JOB.log" \
    convert_ali.py --frame-subsampling-factor="$fsf" "$alidir/final.mdl" "$dir/final.mdl" \
      "$dir/tree" "ark:gunzip -c $alidir/ali.JOB.gz|" "ark:|gzip -c > $dir/ali.JOB.gz" \
    || { echo "$0: converting the alignments failed; see $dir/log/convert.*.log" >&2; exit 1; }
  echo "$nj" > "$dir/num_jobs"
  echo "$fsf" > "$dir/frame_subsampling_factor"
fi

read -r -d '' leaves frames <<< "$(json_get.py "$dir/tree_report.json" num_leaves frames)" || true
echo "$0: built a chain tree of $leaves leaves over $frames subsampled frames in $dir"
