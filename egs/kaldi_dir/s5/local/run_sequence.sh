#!/usr/bin/env bash
# Sequence training after cross-entropy (run.sh's --seq-epochs; steps/nnet/train_mpe.sh): the
# numerator is <src-dir>'s alignment of the transcripts (<exp-dir>_ali), the denominator its
# lattices (<exp-dir>_denlats), both of --data (the speed copies too, as Kaldi's nnet3
# discriminative recipes do; the cv set's utterances among them); --epochs of --criterion on
# --data-tr into <exp-dir>_<criterion>, then decoded and scored on <graph-dir>. Each part is
# skipped when done; one made from another model or with other options is made again.
# Stages: 0 align, lattices, train, decode; 1 summary.

# Begin configuration section.
stage=0
stop_stage=1
epochs=4
criterion=smbr      # smbr | mmi
frame_smoothing=0.3 # weight of frame cross-entropy in the sequence gradient
seq_opts=           # more steps/nnet/train_mpe.sh options, e.g. "--learn-rate 0.00002"
align_opts=         # more steps/nnet/align.sh options
data=data/train     # aligned and lattices made (with speed perturbation: data/train_sp)
data_tr=data/train_tr90  # trained on (data/train_sp_tr90)
data_cv=data/train_cv10
nj=2
device=cpu
decode_sets=test    # data/<set> decoded into <exp>/decode_<set>
decode_opts=        # more steps/nnet/decode.sh options
ref_normalize=false # steps/score.sh's --ref-normalize
gmm_decode_dir=     # the summary: the GMM's decode dir to show beside the model's
model_name=network  # what the summary calls <src-dir>'s model
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <lang-dir> <graph-dir> <src-dir> <exp-dir>
 ... run from the recipe dir after its stage 3: trains <exp-dir>_<criterion> from <src-dir>'s
 network (e.g. the last realignment round's), with <exp-dir>_ali and <exp-dir>_denlats.
 e.g.: $0 --epochs 2 ../kaldi/data/lang ../kaldi/exp/mono/graph exp/blstm exp/blstm
Options (default): --epochs N ($epochs), --criterion smbr|mmi ($criterion), --frame-smoothing H
  ($frame_smoothing), --seq-opts, --align-opts "...", --data, --data-tr, --data-cv DIR ($data,
  $data_tr, $data_cv), --nj N ($nj), --device ($device), --decode-sets "X Y" ($decode_sets),
  --decode-opts, --ref-normalize ($ref_normalize), --gmm-decode-dir, --model-name, --stage, --stop-stage
USAGE
  exit 1
fi
lang_dir=$1
graph_dir=$2
src=$3
dir=$4
seq_dir=${dir}_$criterion
check_choice criterion "$criterion" smbr mmi

if run_stage 0; then
  banner 4 "sequence training ($criterion, $epochs epochs) of $src into $seq_dir"
  if [ -f ${dir}_ali/ali.1.gz ] && [ ${dir}_ali/ali.1.gz -nt $src/final.nnet ] && \
      [ "$(cat ${dir}_ali/data_dir 2>/dev/null)" == $data ]; then
    echo "${dir}_ali is already made with $src of $data: skipping"
  else
    rm -rf ${dir}_ali
    # shellcheck disable=SC2086
    steps/nnet/align.sh --nj $nj --cmd "$train_cmd" --device $device $align_opts \
      $data "$lang_dir" $src ${dir}_ali
    echo $data > ${dir}_ali/data_dir
  fi
  # (lattices of other data are removed; a killed run's own are resumed job by job)
  [ "$(cat ${dir}_denlats/data_dir 2>/dev/null)" == $data ] || rm -rf ${dir}_denlats
  mkdir -p ${dir}_denlats && echo $data > ${dir}_denlats/data_dir
  steps/nnet/make_denlats.sh --nj $nj --cmd "$train_cmd" --device $device \
    $data "$lang_dir" $src ${dir}_denlats
  # (trained with other options, or from another model or one trained since: trained again;
  # a killed training with the same ones goes on)
  made_by="$src $data_tr epochs=$epochs frame_smoothing=$frame_smoothing $seq_opts"
  if [ "$(cat $seq_dir/made_by 2>/dev/null)" != "$made_by" ] || [ $src/final.nnet -nt $seq_dir/made_by ]; then
    [ -e $seq_dir ] && echo "$seq_dir was trained with other options: training it again"
    rm -rf $seq_dir
  fi
  if [ -e $seq_dir/final.nnet ] && [ "$(json_get.py $seq_dir/train_state.json done)" == true ]; then
    echo "$seq_dir is already trained: skipping"
  else
    mkdir -p $seq_dir && echo "$made_by" > $seq_dir/made_by
    do_smbr=true; [ $criterion == mmi ] && do_smbr=false
    # shellcheck disable=SC2086
    steps/nnet/train_mpe.sh --cmd "$cuda_cmd" --device $device --num-iters $epochs \
      --do-smbr $do_smbr --frame-smoothing $frame_smoothing --cv-data $data_cv \
      $seq_opts $data_tr "$lang_dir" $src ${dir}_ali ${dir}_denlats $seq_dir
  fi
  steps/nnet/decode_sets.sh --nj $nj --cmd "$decode_cmd" --device $device \
    --ref-normalize $ref_normalize --decode-opts "$decode_opts" "$graph_dir" $seq_dir "$decode_sets"
fi

if run_stage 1 && [ -e $seq_dir/final.nnet ]; then
  recipe_summary.py ${gmm_decode_dir:+--gmm-decode-dir "$gmm_decode_dir"} \
    --model-name "$model_name, then $epochs epochs of $criterion training" $seq_dir \
    $(printf "$seq_dir/decode_%s " $decode_sets) | tee $seq_dir/summary.txt
fi
