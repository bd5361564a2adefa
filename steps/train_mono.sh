#!/usr/bin/env bash
# A monophone GMM, as Kaldi's steps/train_mono.sh, without Kaldi: the monophone tree and
# transition model (init_mono.py, as gmm-init-mono), an equal alignment of each utterance on
# its training graph (align_equal.py, as align-equal-compiled), then train_mono_gmm.py:
# --num-iters re-estimations (gmm-acc-stats-ali, gmm-est --mix-up to --totgauss Gaussians),
# realigning (gmm-align-compiled, --boost-silence) at Kaldi's iterations, on features with
# per-speaker mean normalisation and deltas. With --init-ali, the first statistics come from
# that alignment dir (e.g. a flat-start network's) instead of the equal alignment.
# Writes into <dir>: final.mdl (Kaldi's GMM model), tree, phones.txt, ali.1.gz (the final
# model's alignment of every utterance; num_jobs 1), equal/ (the equal alignment),
# log/train.log, log/train_report.json. An alignment dir like Kaldi's exp/mono_ali:
# steps/import_ali.sh and steps/nnet/build_tree.sh take it. Done parts are skipped.

# Begin configuration section.
cmd=run.pl
nj=4                 # equal-alignment jobs (at most one a speaker)
totgauss=1000        # Gaussians of the final model, summed over the pdfs
num_iters=40         # re-estimations
boost_silence=1.0    # factor of the optional silence's likelihoods in the alignments
edge_silence=true    # the equal alignment begins and ends every utterance with silence
                     # (false: Kaldi's, each optional silence drawn at random)
init_ali=            # an alignment dir of the same lang dir to start from (empty: equal)
seed=0               # seed of the equal alignment's paths and of the mixing up
train_opts=          # more train_mono_gmm.py options, e.g. "--realign-iters='1 5 10'"
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v train_mono_gmm.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir> <exp-dir>
 ... where <data-dir> has feats.scp, cmvn.scp and text, and <lang-dir> is a lang dir
 (utils/prepare_lang.sh: L.fst, topo, phones/sets.int, phones/optional_silence.csl, words.txt).
 e.g.: $0 --nj 4 --boost-silence 1.25 data/train data/lang exp/mono
Options:
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --nj <n>                     # equal-alignment jobs (default: $nj)
  --totgauss <n>               # Gaussians of the final model (default: $totgauss)
  --num-iters <n>              # re-estimations (default: $num_iters)
  --boost-silence <factor>     # silence likelihoods in the alignments (default: $boost_silence)
  --edge-silence true|false    # silence at each utterance's edges in the equal alignment
                               # (default: $edge_silence)
  --init-ali <ali-dir>         # start from this alignment, not an equal one (default: none)
  --seed <n>                   # equal alignment's paths, mixing up (default: $seed)
  --train-opts "<opts>"        # more train_mono_gmm.py options
USAGE
  exit 1
fi

data=$1
lang=$2
dir=$3
utils=$(cd "$(dirname "$0")/../utils" && pwd)

for f in "$data/feats.scp" "$data/cmvn.scp" "$data/text" "$lang/L.fst" "$lang/topo" \
         "$lang/words.txt" "$lang/phones.txt" "$lang/phones/sets.int" \
         "$lang/phones/optional_silence.csl"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
if [ -n "$init_ali" ]; then
  for f in "$init_ali/num_jobs" "$init_ali/final.mdl"; do
    [ ! -f "$f" ] && echo "$0: missing file $f (--init-ali)" >&2 && exit 1
  done
  "$utils/lang/check_phones_compatible.sh" "$lang/phones.txt" "$init_ali/phones.txt" || \
    { echo "$0: --init-ali is not an alignment of $lang's phones" >&2; exit 1; }
fi
nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
mkdir -p "$dir/log"

if [ -s "$dir/num_jobs" ] && [ "$dir/num_jobs" -nt "$dir/final.mdl" ] && \
   [ "$dir/final.mdl" -nt "$data/feats.scp" ]; then
  echo "$0: $dir already holds the monophone GMM and its alignment: skipping"
  exit 0
fi
rm -f "$dir/num_jobs"

# 1. the monophone tree and transition model (0.mdl: the transition model alone)
init_mono.py --shared-phones="$lang/phones/sets.int" "$lang/topo" "$dir/0.mdl" "$dir/tree" \
  > "$dir/log/init_mono.log" 2>&1 || {
    echo "$0: init_mono.py failed, see $dir/log/init_mono.log:" >&2
    tail -n 3 "$dir/log/init_mono.log" >&2; exit 1; }
cp -L "$lang/phones.txt" "$dir/phones.txt"

# 2. the alignment to start from
start=$init_ali
if [ -z "$start" ]; then
  start=$dir/equal
  mkdir -p "$start/log"
  rm -f "$start/num_jobs" "$start"/ali.*.gz
  "$utils/split_data.sh" "$data" $nj
  sdata=$data/split$nj
  echo "$0: equal alignment of $data ($nj jobs)"
  $cmd JOB=1:$nj "$start/log/align.JOB.log" \
    align_equal.py --seed=$seed --edge-silence=$edge_silence --report="$start/log/align_report.JOB.json" \
      "$dir/tree" "$dir/0.mdl" "$lang" "scp:$sdata/JOB/feats.scp" \
      "ark:$sdata/JOB/text" "ark:|gzip -c > $start/ali.JOB.gz" || {
    echo "$0: equal alignment failed; see $start/log/align.*.log:" >&2
    grep -ihE "error|exception" "$start"/log/align.*.log | tail -n 3 >&2 || true
    exit 1; }
  echo $nj > "$start/num_jobs"
fi

# 3. the GMM
echo "$0: training a monophone GMM of $totgauss Gaussians on $data ($num_iters iterations," \
     "starting from $start; log: $dir/log/train.log)"
# shellcheck disable=SC2086
$cmd "$dir/log/train.log" \
  train_mono_gmm.py --tot-gauss=$totgauss --num-iters=$num_iters \
    --boost-silence=$boost_silence --seed=$seed --report="$dir/log/train_report.json" \
    $train_opts "$data" "$lang" "$dir/0.mdl" "$dir/tree" "$start" "$dir/final.mdl" \
    "ark:|gzip -c > $dir/ali.1.gz" || {
  echo "$0: train_mono_gmm.py failed, see $dir/log/train.log:" >&2
  grep -ihE "error|exception" "$dir/log/train.log" | tail -n 3 >&2 || true
  exit 1; }
echo > "$dir/cmvn_opts"  # (Kaldi's train_mono.sh records its CMVN options: the defaults)
echo 1 > "$dir/num_jobs"
read -r -d '' trained utts gauss <<< "$(json_get.py "$dir/log/train_report.json" used \
  utterances num_gauss)" || true
echo "$0: $dir: a monophone GMM of $gauss Gaussians, trained on and aligning $trained of" \
     "$utts utterances (the others named in $dir/log/train_report.json)"
