#!/usr/bin/env bash
# Realignment rounds after the recipe's first network (Kaldi nnet1's align-and-retrain; run.sh's
# --realign-iters): round k aligns data/train with the network of round k-1 (<src-dir> for the
# first) into <src-dir>_ali<k>, imports it and trains <src-dir>_re<k> on data/train_tr90 (cv:
# data/train_cv10; steps/nnet/realign_round.sh), then decodes and scores it on <graph-dir>
# (steps/nnet/decode_sets.sh). Each part is skipped when done. Stages: 0 the rounds, 1 their
# summary (with --gmm-ali: how much of each alignment agrees with the GMM's).

# Begin configuration section.
stage=0
stop_stage=1
iters=1              # rounds
init=previous        # previous: a round goes on training the model that aligned | scratch
prior_scale=0.5      # prior scale of the rounds' alignment (decoding keeps its own)
gmm_ali=             # the GMM's alignment dir to compare each round's with
align_opts=          # more steps/nnet/align.sh options, e.g. "--beam 20"
train_opts=          # train.py options of the rounds (before --round-train-opts)
round_train_opts=    # train.py options after the round's own, e.g. "--learning-rate=0.0002"
model_config=        # steps/nnet/train.sh's (empty: its defaults)
batching_config=
schedule_config=
nproc=1              # training processes (GPUs) for torchrun
parallel=            # with --nproc > 1: ddp | average
torchrun_opts=
nj=2
device=cpu
decode_sets=test     # data/<set> decoded into <exp>/decode_<set>
decode_opts=         # more steps/nnet/decode.sh options
ref_normalize=false  # steps/score.sh's --ref-normalize
gmm_decode_dir=      # the summary: the GMM's decode dir to show beside each round's
model_name=network   # what the summary calls <src-dir>'s model
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <lang-dir> <graph-dir> <src-dir>
 ... run from the recipe dir after its stage 3 (data/train, data/train_tr90, data/train_cv10,
 <src-dir>/final.nnet). Stages: 0 align, retrain, decode each round; 1 summary.
 e.g.: $0 --iters 2 --gmm-ali ../kaldi/exp/mono_ali ../kaldi/data/lang ../kaldi/exp/mono/graph exp/blstm
Options (default): --iters N ($iters), --init previous|scratch ($init), --prior-scale S
  ($prior_scale), --gmm-ali DIR, --align-opts, --train-opts, --round-train-opts "...",
  --model-config, --batching-config, --schedule-config FILE, --nproc N, --parallel,
  --torchrun-opts, --nj N ($nj), --device ($device), --decode-sets "X Y" ($decode_sets),
  --decode-opts, --ref-normalize ($ref_normalize), --gmm-decode-dir, --model-name, --stage, --stop-stage
USAGE
  exit 1
fi
lang_dir=$1
graph_dir=$2
first=$3

if run_stage 0; then
  src=$first
  for k in $(seq 1 $iters); do
    banner 4 "realignment round $k of $iters: align with $src, retrain into ${first}_re$k"
    # align data/train into <first>_ali<k>, compare with the GMM's, import, train <first>_re<k>
    steps/nnet/realign_round.sh --nj $nj --cmd "$train_cmd" --train-cmd "$cuda_cmd" \
      --device $device --init $init --prior-scale $prior_scale \
      ${align_opts:+--align-opts "$align_opts"} ${gmm_ali:+--gmm-ali "$gmm_ali"} \
      --nproc $nproc ${parallel:+--parallel $parallel} \
      ${model_config:+--model-config $model_config} \
      ${batching_config:+--batching-config $batching_config} \
      ${schedule_config:+--schedule-config $schedule_config} \
      ${torchrun_opts:+--torchrun-opts "$torchrun_opts"} \
      ${train_opts:+--train-opts "$train_opts"} \
      ${round_train_opts:+--round-train-opts "$round_train_opts"} \
      data/train data/train_tr90 data/train_cv10 "$lang_dir" $src ${first}_ali$k ${first}_re$k
    steps/nnet/decode_sets.sh --nj $nj --cmd "$decode_cmd" --device $device \
      --ref-normalize $ref_normalize --decode-opts "$decode_opts" "$graph_dir" ${first}_re$k "$decode_sets"
    src=${first}_re$k
  done
fi

if run_stage 1; then
  for k in $(seq 1 $iters); do
    [ -n "$gmm_ali" ] && echo "realignment round $k: ${first}_ali$k against the GMM's: $(json_get.py \
      ${first}_ali$k/compare_gmm.json phone_agreement | tr -d '\n')% of frames on the same phone"
    recipe_summary.py ${gmm_decode_dir:+--gmm-decode-dir "$gmm_decode_dir"} --model-name "$model_name, realignment round $k" ${first}_re$k \
      $(printf "${first}_re$k/decode_%s " $decode_sets) | tee ${first}_re$k/summary.txt
  done
fi
