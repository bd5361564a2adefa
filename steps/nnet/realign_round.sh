#!/usr/bin/env bash
# One realignment round (Kaldi nnet1's align-then-retrain): aligns <data-dir> with the network
# of <src-dir> into the Kaldi alignment dir <ali-dir> (steps/nnet/align.sh), compares it with
# --gmm-ali's alignment (<ali-dir>/compare_gmm.json, compare_alignments.py), imports it into
# <ali-dir>_targets (steps/import_ali.sh) and trains a network on those targets into <exp-dir>
# (steps/nnet/train.sh on <data-tr>, <data-cv>). With --init previous the training goes on
# from <src-dir>'s network at the learning rate its schedule ended at (train.py --init-model,
# nnet1's --nnet-init; --keep-initial-model=true: if no epoch improves on it, it is the round's
# model); with --init scratch a new network is trained. Each part is skipped when its output
# is already there and newer than its input, so running the round again redoes nothing.
# Decoding the round's model is the caller's (steps/nnet/decode.sh).

# Begin configuration section.
cmd=run.pl           # how to run the alignment jobs
train_cmd=           # how to run the training job (default: --cmd), e.g. "queue.pl --gpu 1"
init=previous        # previous: go on training <src-dir>'s network | scratch: a new network
gmm_ali=             # an alignment dir (the GMM's) to compare <ali-dir> with
train_opts=          # train.py options before the round's own (--init-model, --learning-rate)
round_train_opts=    # train.py options after the round's own (they win over them)
align_opts=          # more steps/nnet/align.sh options, e.g. "--beam 20"
# Passed on only when given (empty: the default of the step or tool that takes them):
nj=                  # align.sh: parallel jobs
prior_scale=         # align.sh (forward.py): prior scale of the alignment
device=              # align.sh and train.sh: cpu|cuda|auto
model_config=        # train.sh: conf files
batching_config=
schedule_config=
nproc=               # train.sh: processes (GPUs) for torchrun
parallel=            # train.sh: ddp|average
torchrun_opts=       # train.sh: torchrun's own options
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v json_get.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 7 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <data-tr> <data-cv> <lang-dir> <src-dir> <ali-dir> <exp-dir>
 ... where <src-dir> holds the aligning network (final.nnet, final.mdl, tree,
 ali_train_pdf.counts, train_state.json: what steps/nnet/train.sh leaves) and <data-tr>,
 <data-cv> are the training and cross-validation parts of <data-dir>. Writes <ali-dir>,
 <ali-dir>_targets and <exp-dir>.
 e.g.: $0 --gmm-ali exp/mono_ali --prior-scale 0.5 data/train data/train_tr90 \\
          data/train_cv10 data/lang exp/blstm exp/blstm_ali1 exp/blstm_re1
Options:
  --cmd (run.pl|queue.pl ...)  # how to run the alignment jobs (default: $cmd)
  --train-cmd <cmd>            # how to run the training (default: --cmd)
  --init previous|scratch      # go on training <src-dir>'s network, or a new one (default: $init)
  --gmm-ali <ali-dir>          # compare the alignment with this one (<ali-dir>/compare_gmm.json)
  --train-opts "<opts>"        # train.py options, before the round's own
  --round-train-opts "<opts>"  # train.py options, after the round's own (they win)
  --align-opts "<opts>"        # more steps/nnet/align.sh options
 Passed on only when given (default: the step's that takes them):
  --nj <n> --prior-scale <float>                   # steps/nnet/align.sh
  --device cpu|cuda|auto                           # steps/nnet/align.sh and train.sh
  --model-config, --batching-config, --schedule-config <file>, --nproc <n>,
  --parallel ddp|average, --torchrun-opts "<opts>" # steps/nnet/train.sh
USAGE
  exit 1
fi

data=$1
data_tr=$2
data_cv=$3
lang=$4
srcdir=$5
alidir=$6
dir=$7
targets=${alidir}_targets
steps=$(cd "$(dirname "$0")/.." && pwd)

case "$init" in
  previous|scratch) ;;
  *) echo "$0: --init is previous or scratch, not '$init'" >&2; exit 1 ;;
esac
for f in "$data/feats.scp" "$data/text" "$data_tr/feats.scp" "$data_cv/feats.scp" \
         "$srcdir/final.nnet"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
[ -d "$lang" ] || { echo "$0: no lang dir $lang" >&2; exit 1; }
if [ -n "$gmm_ali" ] && [ ! -d "$gmm_ali" ]; then
  echo "$0: --gmm-ali $gmm_ali is not a directory" >&2
  exit 1
fi
[ -n "$train_cmd" ] || train_cmd=$cmd

mkdir -p "$dir/log"

# the options given, as "--name value" (an empty one is left to the step)
given() {  # <array> <variable>...
  local -n to=$1
  local v
  shift
  for v in "$@"; do
    if [ -n "${!v}" ]; then to+=("--${v//_/-}" "${!v}"); fi
  done
}
align_args=(--cmd "$cmd")
given align_args nj prior_scale device
train_args=(--cmd "$train_cmd")
given train_args device model_config batching_config schedule_config nproc parallel \
  torchrun_opts

# 1. align with the network of <src-dir>
if [ -s "$alidir/num_jobs" ] && [ "$alidir/num_jobs" -nt "$srcdir/final.nnet" ]; then
  echo "$alidir is already aligned with $srcdir: skipping"
else
  # shellcheck disable=SC2086
  "$steps/nnet/align.sh" "${align_args[@]}" $align_opts "$data" "$lang" "$srcdir" "$alidir"
fi
if [ -n "$gmm_ali" ]; then
  compare_alignments.py --data-dir "$data" "$gmm_ali" "$alidir" "$alidir/compare_gmm.json"
fi

# 2. import it as training targets
if [ -s "$targets/targets.scp" ] && [ "$targets/targets.scp" -nt "$alidir/num_jobs" ]; then
  echo "$targets is already imported: skipping"
else
  "$steps/import_ali.sh" "$alidir" "$data" "$targets"
fi

# 3. train on it
if [ -e "$dir/final.nnet" ]; then
  echo "$dir/final.nnet exists: skipping (delete it to train again)"
  exit 0
fi
restart=false
if [ -f "$dir/train_state.json" ] && [ "$(json_get.py "$dir/train_state.json" done)" == true ]; then
  echo "$dir/final.nnet was deleted after a finished training: training again from scratch"
  restart=true
fi
opts=$train_opts
if [ "$init" == previous ]; then
  # go on where the aligning network's training stopped, as a continued newbob training would
  # (at the first network's starting rate every epoch overfits the new targets and is
  # rejected); if no epoch improves on it, the aligning network is the round's model
  [ -f "$srcdir/train_state.json" ] || {
    echo "$0: --init previous: missing file $srcdir/train_state.json (the learning rate" \
         "its training ended at)" >&2; exit 1; }
  opts+="${opts:+ }--init-model=$srcdir/final.nnet --keep-initial-model=true"
  opts+=" --learning-rate=$(json_get.py "$srcdir/train_state.json" schedule.lr)"
fi
opts+="${round_train_opts:+${opts:+ }$round_train_opts}"
"$steps/nnet/train.sh" "${train_args[@]}" --restart $restart ${opts:+--train-opts "$opts"} \
  "$data_tr" "$data_cv" "$lang" "$targets" "$targets" "$dir"
