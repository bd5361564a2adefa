#!/usr/bin/env bash
# No GMM (run.sh's --ali none, stage 2): the train/cv split of data/train, a flat start into
# exp/flat (steps/nnet/train_flatstart.sh: equal alignment, a monophone network, --rounds rounds
# of realign-and-retrain), data/train aligned with its last network (exp/flat/ali_final), a
# context-dependent tree of --num-leaves leaves grown from that alignment (steps/nnet/build_tree.sh
# into exp/tri_ali; 0: none, the monophone alignment is the targets), imported into
# exp/ali_train as the recipe network's targets. With --objective gmm the flat start is a
# monophone GMM instead (steps/train_mono.sh into exp/flat/mono, as Kaldi's train_mono.sh;
# its final alignment is exp/flat/ali_final): on data/train, or where data/train has more than
# --gmm-max-utts utterances (or --first-subset is given) on that many of its shortest
# (data/train_mono_subset, as Kaldi's recipes train mono on 500-10k short ones), and then all
# of data/train aligned with it (steps/align_si.sh into exp/flat/ali_final). Each part is
# skipped when done.

# Begin configuration section.
objective=gmm        # gmm: a monophone GMM (steps/train_mono.sh, Kaldi's; --rounds unused) |
                     # fullsum: a first network by Baum-Welch over each utterance's training
                     # graph | ce: one by cross-entropy on the equal alignment
boost_silence=1.25   # the GMM's silence boost in training and in align_si.sh (Kaldi's recipes')
gmm_opts=            # more steps/train_mono.sh options with --objective gmm
rounds=1             # realign-and-retrain rounds of the monophone flat start
first_subset=0       # >0: the first network (or the GMM) trains on this many of the shortest utterances
gmm_max_utts=10000   # the GMM's utterances at most (the shortest; then align_si.sh aligns all)
num_leaves=1000      # leaves of the context-dependent tree (0: no tree)
model_config=        # steps/nnet/train_flatstart.sh's (empty: its defaults)
batching_config=
schedule_config=
train_opts=          # train.py options of the flat-start networks
align_opts=          # more steps/nnet/align.sh options
nproc=1
parallel=
torchrun_opts=
nj=2
device=cpu
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 1 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <lang-dir>
 ... run from the recipe dir after its stage 1 (data/train with features).
 e.g.: $0 --rounds 2 --num-leaves 500 data/lang
Options (default): --objective fullsum|ce|gmm ($objective), --boost-silence F ($boost_silence),
  --gmm-opts "<more steps/train_mono.sh options>", --gmm-max-utts N ($gmm_max_utts), --rounds N ($rounds), --first-subset N
  ($first_subset), --num-leaves N ($num_leaves), --model-config, --batching-config,
  --schedule-config FILE, --train-opts, --align-opts "...", --nproc N, --parallel,
  --torchrun-opts, --nj N ($nj), --device ($device)
USAGE
  exit 1
fi
lang_dir=$1

split_tr_cv --train-all-if-words-lost=true
if [ "$objective" == gmm ]; then
  # (Kaldi's recipes: steps/train_mono.sh --boost-silence 1.25, then steps/align_si.sh; the
  # GMM's own final alignment is that of align_si.sh)
  # shellcheck disable=SC2086
  max=$gmm_max_utts; [ "$first_subset" -gt 0 ] && max=$first_subset
  mono_data=data/train
  if [ "$(wc -l < data/train/utt2spk)" -gt "$max" ]; then
    mono_data=data/train_mono_subset
    if ! up_to_date $mono_data/utt2spk data/train/utt2spk || \
       [ "$(wc -l < $mono_data/utt2spk)" -ne "$max" ]; then
      rm -rf $mono_data
      utils/subset_data_dir.sh --shortest data/train "$max" $mono_data
    fi
    echo "$0: the monophone GMM trains on the $max shortest of data/train's" \
      "$(wc -l < data/train/utt2spk) utterances ($mono_data; --gmm-max-utts), then aligns them all"
  fi
  # shellcheck disable=SC2086
  steps/train_mono.sh --nj $nj --cmd "$train_cmd" --boost-silence $boost_silence $gmm_opts \
    $mono_data "$lang_dir" exp/flat/mono
  if up_to_date exp/flat/ali_final/num_jobs exp/flat/mono/final.mdl; then
    echo "exp/flat/ali_final already holds exp/flat/mono's alignment: skipping"
  elif [ $mono_data != data/train ]; then  # (Kaldi's recipes: steps/align_si.sh after mono)
    rm -rf exp/flat/ali_final
    steps/align_si.sh --nj $nj --cmd "$train_cmd" --boost-silence $boost_silence data/train \
      "$lang_dir" exp/flat/mono exp/flat/ali_final
  else
    rm -rf exp/flat/ali_final
    mkdir -p exp/flat/ali_final
    cp exp/flat/mono/{ali.1.gz,final.mdl,tree,phones.txt} exp/flat/ali_final/
    echo 1 > exp/flat/ali_final/num_jobs
  fi
else
  steps/nnet/train_flatstart.sh --nj $nj --cmd "$train_cmd" --train-cmd "$cuda_cmd" \
    --num-rounds $rounds --first-objective $objective \
    --first-subset $first_subset --device $device --nproc $nproc ${parallel:+--parallel $parallel} \
    ${model_config:+--model-config $model_config} \
    ${batching_config:+--batching-config $batching_config} \
    ${schedule_config:+--schedule-config $schedule_config} ${torchrun_opts:+--torchrun-opts "$torchrun_opts"} \
    ${train_opts:+--train-opts "$train_opts"} ${align_opts:+--align-opts "$align_opts"} \
    data/train "$lang_dir" exp/flat
  flat_final=exp/flat/$(cat exp/flat/final_nnet_dir)
  if up_to_date exp/flat/ali_final/num_jobs $flat_final/final.nnet; then
    echo "exp/flat/ali_final is already aligned with $flat_final: skipping"
  else
    # shellcheck disable=SC2086
    steps/nnet/align.sh --nj $nj --cmd "$train_cmd" --device $device $align_opts \
      data/train "$lang_dir" $flat_final exp/flat/ali_final
  fi
fi
cd_ali=exp/flat/ali_final
if [ "$num_leaves" -gt 0 ]; then
  cd_ali=exp/tri_ali
  if up_to_date exp/tri_ali/num_jobs exp/flat/ali_final/num_jobs; then
    echo "exp/tri_ali already holds the CD tree and alignment: skipping"
  else
    steps/nnet/build_tree.sh --nj $nj --cmd "$train_cmd" $num_leaves data/train "$lang_dir" \
      exp/flat/ali_final exp/tri_ali
  fi
fi
if up_to_date exp/ali_train/targets.scp $cd_ali/num_jobs; then
  echo "exp/ali_train already holds the imported alignments of $cd_ali: skipping"
else
  rm -rf exp/ali_train
  steps/import_ali.sh $cd_ali data/train exp/ali_train
fi
