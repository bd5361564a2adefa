#!/usr/bin/env bash
# <dir>: the utterances of the Kaldi dir's data dir <src> with the features its GMMs were trained
# on: the Kaldi dir's own feats.scp and cmvn.scp (--use-kaldi-feats true), else MFCCs computed
# with --mfcc-config (the Kaldi dir's conf/mfcc.conf at the audio's sample rate) and their CMVN
# stats. The input of local/make_fmllr_data.sh (run.sh --fmllr true: data/train_gmm,
# data/test_gmm) and of the chain numerator's lattices (run.sh --chain true: data/train_gmm,
# steps/align_si.sh --generate-lats). Skipped where <dir> has both feats.scp and cmvn.scp.

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

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <kaldi-dir> <src> <dir>
 ... <src> inside <kaldi-dir>, e.g.
 e.g.: $0 --mfcc-config data/mfcc.conf ~/kaldi/egs/wsj/s5 data/train_si284 data/train_gmm
Options: --nj N ($nj), --use-kaldi-feats true|false ($use_kaldi_feats), --mfcc-config FILE
USAGE
  exit 1
fi
kaldi_dir=$1
src=$2
dir=$3

if [ -s $dir/feats.scp ] && [ -s $dir/cmvn.scp ]; then
  echo "$dir already has the GMM's features: skipping"
  exit 0
fi
rm -rf $dir
import_data_dir.py --keep-feats=$use_kaldi_feats "$kaldi_dir" "$kaldi_dir/$src" $dir
if [ ! -s $dir/feats.scp ]; then
  name=$(basename $dir)
  steps/make_mfcc.sh --nj $nj --cmd "$train_cmd" --mfcc-config "$mfcc_config" \
    $dir exp/make_mfcc/$name mfcc
  steps/compute_cmvn_stats.sh $dir exp/make_mfcc/$name mfcc
fi
