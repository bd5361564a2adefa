#!/usr/bin/env bash
# Speed perturbation of the training data (run.sh's --speed-perturb true; Kaldi's
# local/nnet3/run_ivector_common.sh): stage 0 (run.sh's stage 1) makes data/train_sp, the
# utterances of data/train that have features at speeds 0.9, 1.0 and 1.1
# (utils/data/perturb_data_dir_speed_3way.sh), and its features and CMVN stats; stage 1 (run.sh's
# stage 2) its targets, the GMM alignment of exp/ali_train resampled to each copy's frames
# (exp/ali_train_sp; steps/perturb_ali.sh), and data/train_sp_tr90: the 3 copies of every
# data/train_tr90 utterance (data/train_cv10 stays unperturbed). Each part is skipped when done.

# Begin configuration section.
stage=0
stop_stage=1
nj=2
feat_type=mfcc       # mfcc | fbank: steps/make_<feat-type>.sh
feat_config=conf/mfcc.conf
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 0 ]; then
  cat >&2 <<USAGE
Usage: $0 [options]
 ... run from the recipe dir: stage 0 after its stage 1 (data/train with features), stage 1
 after its stage 2 (exp/ali_train, data/train_tr90).
 e.g.: $0 --feat-type fbank --feat-config data/fbank.conf --stop-stage 0
Options: --nj N ($nj), --feat-type mfcc|fbank ($feat_type), --feat-config FILE, --stage, --stop-stage
USAGE
  exit 1
fi

if run_stage 0; then
  banner 1 "speed perturbation: data/train_sp (data/train at speeds 0.9, 1.0, 1.1) and its features"
  if [ -s data/train_sp/feats.scp ] && [ -s data/train_sp/cmvn.scp ]; then
    echo "data/train_sp already has feats.scp and cmvn.scp: skipping"
  else
    rm -rf data/train_sp  # (a partial one: the perturbation refuses a dir with feats.scp)
    sp_src=data/train
    n=$(wc -l < data/train/feats.scp); u=$(wc -l < data/train/utt2spk)
    if [ $n -lt $u ]; then  # (audio that could not be read: counted and skipped)
      echo "$0: data/train_sp: the speeds of the $n utterances of data/train that have features (of $u)"
      rm -rf data/train_with_feats
      utils/subset_data_dir.sh --utt-list <(cut -d' ' -f1 data/train/feats.scp) data/train \
        data/train_with_feats
      sp_src=data/train_with_feats
    fi
    utils/data/perturb_data_dir_speed_3way.sh $sp_src data/train_sp
    make_feats $feat_type "$feat_config" data/train_sp
  fi
  [ -s data/train_sp/utt2num_frames ] || utils/data/get_utt2num_frames.sh data/train_sp
fi

if run_stage 1; then
  banner 2 "speed perturbation: targets of data/train_sp (exp/ali_train_sp), data/train_sp_tr90"
  if up_to_date exp/ali_train_sp/targets.scp exp/ali_train/targets.scp data/train_sp/feats.scp; then
    echo "exp/ali_train_sp already holds the targets of data/train_sp: skipping"
  else
    steps/perturb_ali.sh exp/ali_train data/train_sp exp/ali_train_sp
  fi
  if up_to_date data/train_sp_tr90/feats.scp data/train_tr90/utt2spk data/train_sp/feats.scp; then
    echo "data/train_sp_tr90 exists: skipping"
  else
    # the copies (utt2uniq: copy -> its source) of the utterances of data/train_tr90 only: no
    # speed of a cv utterance is trained on
    awk 'NR == FNR { tr[$1] = 1; next } ($2 in tr) { print $1 }' data/train_tr90/utt2spk \
      data/train_sp/utt2uniq > data/train_sp/tr90_utts
    utils/subset_data_dir.sh --utt-list data/train_sp/tr90_utts data/train_sp data/train_sp_tr90
    echo "data/train_sp_tr90: $(wc -l < data/train_sp_tr90/utt2spk) utterances (the 3 speeds of" \
      "$(wc -l < data/train_tr90/utt2spk)); cv: data/train_cv10, unperturbed"
  fi
fi
