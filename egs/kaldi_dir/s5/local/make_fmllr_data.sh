#!/usr/bin/env bash
# run.sh's --fmllr true (stage 1): data/train and data/test hold the SAT GMM's fMLLR features
# (nnet1's steps/nnet/make_fmllr_feats.sh), made from the GMM's own features in data/<set>_gmm
# (local/make_gmm_data.sh: the Kaldi dir's feats.scp with --use-kaldi-feats true, else MFCC
# computed with --mfcc-config)
# with <ali>'s cmvn_opts, splice_opts, final.mat and trans.*: <ali>'s for train, for test those
# of the first decode dir beside <graph> covering its speakers (<gmm-decode> first), else
# estimated here as Kaldi's decode_fmllr.sh does, with a note (estimate_fmllr.py into
# exp/make_fmllr/test_trans); fake CMVN
# stats on them, as nnet1 applies no per-speaker CMVN to fMLLR features. A set whose fMLLR
# features are made (data/<set>/fmllr_from) is skipped. data/fmllr_gmm names <ali> (beside
# data/mfcc.conf; steps/nnet/train.sh copies both into the model dir): transcribing new audio
# estimates its speakers' transforms from that GMM the same way.

# Begin configuration section.
nj=2
use_kaldi_feats=false
mfcc_config=conf/mfcc.conf  # the GMM's MFCC options
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
set -euo pipefail

if [ $# -ne 6 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <kaldi-dir> <train> <test> <ali> <graph> <gmm-decode>
 ... the last five inside <kaldi-dir>, e.g.
 e.g.: $0 --mfcc-config data/mfcc.conf ~/kaldi/egs/wsj/s5 data/train_si284 data/test_dev93 \\
          exp/tri4b_ali_si284 exp/tri4b/graph_tgpr exp/tri4b/decode_tgpr_dev93
Options: --nj N ($nj), --use-kaldi-feats true|false ($use_kaldi_feats), --mfcc-config FILE
USAGE
  exit 1
fi
kaldi_dir=$1
train=$2
test=$3
ali=$4
graph=$5
gmm_decode=$6

for x in train test; do
  if [ -s data/$x/feats.scp ] && [ -s data/$x/cmvn.scp ] && [ -f data/$x/fmllr_from ]; then
    echo "data/$x already has fMLLR features ($(cat data/$x/fmllr_from)): skipping"
    continue
  fi
  [ $x == train ] && src=$train || src=$test
  "$(dirname "$0")"/make_gmm_data.sh --nj $nj --use-kaldi-feats $use_kaldi_feats --mfcc-config "$mfcc_config" \
    "$kaldi_dir" $src data/${x}_gmm
  if [ $x == train ]; then
    tdir=$kaldi_dir/$ali
  else
    cands="$kaldi_dir/$gmm_decode"
    for d in "$kaldi_dir/$(dirname "$graph")"/decode*; do
      [ -d "$d" ] && [ "$d" != "$kaldi_dir/$gmm_decode" ] && cands="$cands $d"
    done
    # shellcheck disable=SC2086
    tdir=$(choose_transform_dir.py data/test_gmm $cands)
    if [ -z "$tdir" ]; then
      # (not the training transforms of test speakers who are also in training, estimated on
      # features of their training data's CMVN stats: on kaldi_hindi_sat they gave 36.67%)
      tdir=exp/make_fmllr/test_trans
      echo "$0: note: no fMLLR transforms for the speakers of data/test (in $cands):" \
        "estimating them into $tdir as Kaldi's steps/decode_fmllr.sh does (passes of $ali's" \
        "GMMs on $graph; estimate_fmllr.py)"
      rm -rf $tdir; mkdir -p $tdir/log
      tnj=$(utils/jobs_for_speakers.sh "$0" data/test_gmm $nj)  # (by speaker, as Kaldi's jobs)
      utils/split_data.sh data/test_gmm $tnj
      $train_cmd JOB=1:$tnj $tdir/log/estimate.JOB.log estimate_fmllr.py "$kaldi_dir/$ali" \
        "$kaldi_dir/$graph" data/test_gmm/split$tnj/JOB ark:$tdir/trans.JOB || {
        echo "$0: estimating the fMLLR transforms of data/test failed: see $tdir/log/estimate.*.log" >&2
        exit 1; }
      echo $tnj > $tdir/num_jobs
    fi
  fi
  echo "$0: data/$x: fMLLR features (${tdir:-no transforms}) from data/${x}_gmm"
  rm -f data/$x/feats.scp data/$x/cmvn.scp data/$x/utt2num_frames data/$x/fmllr_from
  steps/nnet/make_fmllr_feats.sh --nj $nj --cmd "$train_cmd" ${tdir:+--transform-dir "$tdir"} \
    data/$x data/${x}_gmm "$kaldi_dir/$ali" exp/make_fmllr/$x fmllr
  steps/compute_cmvn_stats.sh --fake true data/$x exp/make_fmllr/$x fmllr
  echo "${tdir:-none}" > data/$x/fmllr_from
done
echo "$kaldi_dir/$ali" > data/fmllr_gmm
