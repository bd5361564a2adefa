#!/usr/bin/env bash
# Trains the output units of a CTC model: a sentencepiece model (unigram or BPE, at most
# --vocab-size units with <blk> and <unk>) on the transcripts of <data>/text, and writes each
# utterance's unit ids as a Kaldi int-vector table (train_units.py, hybridasr.ctc.units).
# Writes <dir>/units.model, units.txt (<blk> 0, <unk> 1, then the pieces), targets.ark and
# targets.scp (binary int32 vectors; blank 0 never appears in them), num_outputs (the
# network's output dim, blank included), units_report.json (counts, and the words the units
# cannot spell with their utterances: also in log/train_units.log), log/.
# With --lang, transcript words outside <lang>/words.txt are first mapped to its spelling
# (lower-cased, punctuation stripped; punctuation-only tokens dropped), so that the units spell
# the lang dir's words (the unit lexicon of the WFST route, hybridasr.ctc.graph).

# Begin configuration section.
cmd=run.pl
units_config=        # options of train_units.py (default: conf/ctc/units.conf of the recipe,
                     # else of the toolkit)
lang=                # a lang dir whose words.txt the transcripts are mapped to (default: none)
# Passed on only when given (empty: the config file's, else train_units.py's default):
unit_type=           # unigram|bpe
vocab_size=          # number of units, <blk> and <unk> included
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v train_units.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 2 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data> <dir>
 ... where <data> is a Kaldi data dir with text (utterance id, then words), usually the
 training set, and <dir> receives the units and the targets.
 e.g.: $0 --lang data/lang --vocab-size 300 data/train exp/units
Options:
  --cmd (run.pl|queue.pl ...)   # how to run the job (default: $cmd)
  --units-config <file>         # train_units.py options (default: conf/ctc/units.conf)
  --lang <lang-dir>             # map transcript words to <lang-dir>/words.txt's spelling
  --unit-type unigram|bpe       # sentencepiece model type (default: the config file's)
  --vocab-size <n>              # units, <blk> and <unk> included (default: the config file's)
USAGE
  exit 1
fi

data=$1
dir=$2

if [ -z "$units_config" ]; then
  units_config=conf/ctc/units.conf
  [ -f "$units_config" ] || units_config=$(cd -P "$(dirname "$0")/../.." && pwd)/conf/ctc/units.conf
fi
for f in "$data/text" "$units_config"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
[ -n "$lang" ] && [ ! -f "$lang/words.txt" ] && echo "$0: missing file $lang/words.txt" >&2 && exit 1
if [ -n "$vocab_size" ] && ! [[ $vocab_size =~ ^[0-9]+$ ]]; then
  echo "$0: --vocab-size must be a positive integer, got '$vocab_size'" >&2
  exit 1
fi

opts=("--config=$units_config")
[ -n "$unit_type" ] && opts+=("--unit-type=$unit_type")
[ -n "$vocab_size" ] && opts+=("--vocab-size=$vocab_size")
[ -n "$lang" ] && opts+=("--vocab=$lang/words.txt")

mkdir -p "$dir/log"
rm -f "$dir/units.model" "$dir/units.txt" "$dir/targets.ark" "$dir/targets.scp" \
  "$dir/num_outputs" "$dir/units_report.json"

$cmd "$dir/log/train_units.log" train_units.py "${opts[@]}" "$data" "$dir" \
  || { echo "$0: training the units failed; see $dir/log/train_units.log:" >&2;
       grep -E "ERROR|Error|error" "$dir/log/train_units.log" | tail -n 3 >&2 || true; exit 1; }

read -r -d '' outputs utts units per_word unspellable <<< "$(json_get.py \
  "$dir/units_report.json" num_outputs utterances units units_per_word unspellable_words)" || true
echo "$0: $outputs units (blank included) in $dir; $utts utterances -> $units units" \
     "($per_word a word); $unspellable words the units cannot spell (see $dir/units_report.json)"
