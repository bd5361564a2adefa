#!/usr/bin/env bash
# Makes the chain denominator graph, as the part of Kaldi's steps/nnet3/chain/train.py that
# runs chain-est-phone-lm and chain-make-den-fst: a phone LM from the alignments of
# <ali-dir> (phone_lm.fst), then den.fst and normalization.fst from it and <tree-dir>'s tree
# and final.mdl (the chain tree of steps/nnet/chain/build_tree.sh). Writes into <dir>:
# phone_lm.fst, den.fst, normalization.fst, tree, 0.trans_mdl (copies), log/.

# Begin configuration section.
cmd=run.pl
stage=0                 # 0: phone LM, 1: den.fst
lm_opts="--num-extra-lm-states=2000"   # chain-est-phone-lm options (Kaldi's train.py default)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v chain_make_den_fst.py >/dev/null 2>&1 || . "$(dirname "$0")/../../../path.sh"
. "$(dirname "$0")/../../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <tree-dir> <ali-dir> <dir>
 ... where <tree-dir> has the chain tree and final.mdl and <ali-dir> the alignments the phone
 LM is estimated from (ali.*.gz, final.mdl, num_jobs).
 e.g.: $0 exp/chain/tree exp/tri1_ali exp/chain/tdnn
Options:
  --cmd (run.pl|queue.pl ...)   # how to run the jobs (default: $cmd)
  --stage <stage>               # 0: phone LM, 1: den.fst (default: $stage)
  --lm-opts <opts>              # chain_est_phone_lm.py options (default: "$lm_opts")
USAGE
  exit 1
fi

treedir=$1
alidir=$2
dir=$3

for f in "$treedir/tree" "$treedir/final.mdl" "$alidir/final.mdl" "$alidir/num_jobs"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
nj=$(cat "$alidir/num_jobs")
alis=""
for n in $(seq "$nj"); do
  [ ! -f "$alidir/ali.$n.gz" ] && echo "$0: missing file $alidir/ali.$n.gz" >&2 && exit 1
  alis="$alis $alidir/ali.$n.gz"
done

mkdir -p "$dir/log"
if [ "$stage" -le 0 ]; then
  echo "$0: estimating the phone LM from the alignments of $alidir"
  # shellcheck disable=SC2086
  $cmd "$dir/log/make_phone_lm.log" \
    chain_est_phone_lm.py $lm_opts "$alidir/final.mdl" "ark:gunzip -c$alis|" \
      "$dir/phone_lm.fst" \
    || { echo "$0: estimating the phone LM failed; see $dir/log/make_phone_lm.log" >&2; exit 1; }
fi

if [ "$stage" -le 1 ]; then
  echo "$0: making den.fst and normalization.fst"
  cp "$treedir/tree" "$dir/tree"
  cp "$treedir/final.mdl" "$dir/0.trans_mdl"
  $cmd "$dir/log/make_den_fst.log" \
    chain_make_den_fst.py "$dir/tree" "$dir/0.trans_mdl" "$dir/phone_lm.fst" \
      "$dir/den.fst" "$dir/normalization.fst" \
    || { echo "$0: making the den graph failed; see $dir/log/make_den_fst.log" >&2; exit 1; }
fi
grep -h "den.fst:" "$dir/log/make_den_fst.log" | tail -n 1 || true
