#!/usr/bin/env bash
# Trains a CTC network (BLSTM or LSTM) over the sentencepiece units of <units-dir>
# (steps/nnet/train_units.sh on the training set): train.py --objective=ctc, with the same
# batching, schedules (newbob on the CV loss), checkpoints, metrics.jsonl and curves as
# cross-entropy training, but no alignment: <units-dir>/targets.scp gives each training
# utterance's units; the cross-validation set's are encoded with the same units.model into
# <exp-dir>/units_cv when <units-dir> lacks them. Utterances too short for their units (after
# --subsample) are counted, logged and left out (<exp-dir>/ctc_report.json).
# Writes <exp-dir>/final.nnet (and units.model, units.txt: the units it was trained on).

# Begin configuration section.
cmd=run.pl
model_config=      # e.g. conf/ctc/model.conf
batching_config=   # e.g. conf/batching/laplace.conf (whole utterances: no chunking)
schedule_config=   # e.g. conf/schedule/newbob.conf
train_config=      # any train.py options as a config file (e.g. conf/ctc/train.conf)
device=            # cpu|cuda|auto (empty: train.py's)
train_opts=        # more train.py options
restart=false      # true: train from scratch; false: resume
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v train.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-train> <data-cv> <units-dir> <exp-dir>
 e.g.: $0 --model-config conf/ctc/model.conf --train-config conf/ctc/train.conf \\
          data/train_tr90 data/train_cv10 exp/ctc_units exp/blstm_ctc
Options:
  --cmd <run.pl|queue.pl ...>   # how to run the training job (default: $cmd)
  --model-config, --batching-config, --schedule-config, --train-config <file>
  --device cpu|cuda|auto        # (default: train.py's)
  --train-opts "<opts>"         # more train.py options
  --restart true|false          # train from scratch / resume (default: $restart)
USAGE
  exit 1
fi

data_tr=$1
data_cv=$2
units=$3
dir=$4

for f in "$data_tr/feats.scp" "$data_cv/feats.scp" "$data_cv/text" "$units/units.model" \
         "$units/targets.scp" "$units/num_outputs"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done
mkdir -p "$dir/log"
cp "$units/units.model" "$units/units.txt" "$dir/"

units_cv=$units
if [ -n "$(cut -d' ' -f1 "$data_cv/feats.scp" | sort | comm -23 - <(cut -d' ' -f1 "$units/targets.scp" | sort) | head -n 1)" ]; then
  units_cv=$dir/units_cv  # the cv set's units, with the training set's units.model
  train_units.py --model-in="$units/units.model" "$data_cv" "$units_cv" \
    > "$dir/log/units_cv.log" 2>&1 \
    || { echo "$0: encoding $data_cv failed; see $dir/log/units_cv.log" >&2; exit 1; }
fi

opts=(--objective=ctc)
[ -n "$train_config" ] && opts+=(--config="$train_config")
[ -n "$model_config" ] && opts+=(--model-config="$model_config")
[ -n "$batching_config" ] && opts+=(--batching-config="$batching_config")
[ -n "$schedule_config" ] && opts+=(--schedule-config="$schedule_config")
[ -n "$device" ] && opts+=(--device="$device")
[ "$restart" == true ] && opts+=(--restart=true)

echo "$0: training $dir on $data_tr (cv: $data_cv), CTC over the units of $units"
# shellcheck disable=SC2086
$cmd "$dir/log/train.log" \
  train.py "${opts[@]}" $train_opts "$data_tr" "$data_cv" "$units" "$units_cv" "$dir" \
  || { echo "$0: training failed, see $dir/log/train.log:" >&2;
       grep -E "ERROR|Error" "$dir/log/train.log" | tail -n 3 >&2 || true; exit 1; }
[ -e "$dir/final.nnet" ] || { echo "$0: no $dir/final.nnet after training" >&2; exit 1; }
echo "$0: done training $dir: final.nnet -> $(readlink "$dir/final.nnet"); metrics in" \
  "$dir/metrics.jsonl; $(json_get.py "$dir/ctc_report.json" training.too_short | tr -d '\n')" \
  "training utterances too short for their units (see $dir/ctc_report.json)"
