#!/usr/bin/env bash
# Trains the calibration of word confidences, as Kaldi's steps/conf/train_calibration.sh: a
# logistic regression from CTM word features (logit of the lattice posterior, word length in
# characters, seconds per character) to P(correct), fitted on a held-out set with a reference
# (pybin/train_confidence_calibration.py). Writes <out-dir>/calibration.json, which
# transcribe.py --confidence-calibration and steps/get_ctm.sh --confidence-calibration apply.
# Fit it on words the model was not trained on, and report the NCE on another set.

# Begin configuration section.
cmd=run.pl
lmwt=               # the CTM's LM weight, when a decode dir is given (default: the best of its scoring)
ref_normalize=false # true: reference words outside words.txt read as alignment reads them (score.sh's)
features=logit_conf,log_chars,log_seconds_per_char
l2=0.0025           # L2 penalty of the weights, per word (Kaldi's --normalizer)
folds=5             # utterance folds of the cross-fitted NCE in the log (0: none)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v train_confidence_calibration.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir|graph-dir> <decode-dir|ctm> <out-dir>
 e.g.: $0 --ref-normalize true data/dev exp/tri1/graph exp/blstm/decode_dev exp/blstm/decode_dev/confidence
Options:
  --cmd (run.pl|queue.pl...)   # how to run the job (default: $cmd)
  --lmwt <int>                 # LM weight of the decode dir's CTM (default: the best of its scoring)
  --ref-normalize true|false   # (default: $ref_normalize)
  --features <list>            # (default: $features)
  --l2 <float>                 # (default: $l2)
  --folds <int>                # (default: $folds)
USAGE
  exit 1
fi

data=$1
lang=$2
src=$3
dir=$4

for f in "$data/text" "$lang/words.txt"; do
  [ ! -f "$f" ] && echo "$0: expecting file $f to exist" >&2 && exit 1
done
mkdir -p "$dir/log"

if [ -f "$src" ]; then
  ctm=$src
elif [ -d "$src" ]; then
  name=$(basename "$data")
  lmwt_opts=
  [ -n "$lmwt" ] && lmwt_opts="--min-lmwt $lmwt --max-lmwt $lmwt"
  "$(dirname "$0")/../get_ctm.sh" --cmd "$cmd" $lmwt_opts "$data" "$lang" "$src"
  ctm=$(ls -t "$src"/score_*/"$name.ctm" | head -n 1)
else
  echo "$0: $src is neither a decode dir nor a CTM file" >&2
  exit 1
fi
echo "$0: fitting on $ctm against $data/text"

$cmd "$dir/log/train_calibration.log" \
  train_confidence_calibration.py --features=$features --l2=$l2 --folds=$folds \
    --ref-normalize=$ref_normalize --words="$lang/words.txt" \
    "$data/text" "$ctm" "$dir/calibration.json" \
  || { echo "$0: train_confidence_calibration.py failed; see $dir/log/train_calibration.log" >&2; exit 1; }
grep -h "NCE raw" "$dir/log/train_calibration.log" | sed 's/^.*: \([0-9]* words\)/\1/' || true
echo "$0: the calibration is in $dir/calibration.json"
