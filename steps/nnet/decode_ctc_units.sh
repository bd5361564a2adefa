#!/usr/bin/env bash
# CTC decoding without a graph: forward.py writes the network's log-posteriors (no priors;
# --output-rate=model: the network's own frames, a subsampled one not repeated, which prefix
# beam search would read as a unit said twice), decode_ctc_greedy.py takes the best path
# (--beam-size 0) or a prefix beam search over the units and turns them into words with the
# units' sentencepiece model; compute_wer.py scores them against <data>/text (noise markers
# removed, as steps/score.sh does) into <decode-dir>/wer_greedy or wer_beam<N> (hyp.txt: the
# words). No lexicon, no LM: the counterpart of steps/nnet/decode.sh with make_ctc_graph.py's
# TLG graph.

# Begin configuration section.
nnet=            # non-default network (default: <decode-dir>/../final.nnet)
nj=4
cmd=run.pl
beam_size=0      # 0: greedy (best path); N: prefix beam search with N prefixes
device=cpu       # cpu|cuda|auto
ref_normalize=false # true: reference words outside --words read as alignment reads them
                 # (steps/score.sh's; false: as given, Kaldi's)
words=           # the words.txt the units' transcripts were mapped to (train_units.sh --lang);
                 # with it, scoring/reference.json counts the reference words outside it
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v forward.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <units-dir> <data-dir> <decode-dir>
 ... where <units-dir> holds units.model (steps/nnet/train_units.sh) and <decode-dir> is a
 sub-directory of the CTC network's dir (final.nnet).
 e.g.: $0 --beam-size 8 exp/ctc_units data/test exp/blstm_ctc/decode_test_beam8
Options:
  --nj <nj>                    # parallel jobs (default: $nj)
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --nnet <file>                # network (default: <decode-dir>/../final.nnet)
  --beam-size <n>              # 0: greedy; n: prefix beam search (default: $beam_size)
  --device cpu|cuda|auto       # where the network runs (default: $device)
  --words <words.txt>          # count the reference words outside it (default: none)
  --ref-normalize true|false   # with --words: read those as alignment reads them
                               # (default: $ref_normalize, Kaldi's: as given)
USAGE
  exit 1
fi

units=$1
data=$2
dir=$3
utils=$(cd "$(dirname "$0")/../../utils" && pwd)
[ -z "$nnet" ] && nnet=$(dirname "$dir")/final.nnet
case "$ref_normalize" in true|false) ;; *)
  echo "$0: --ref-normalize is true or false, not '$ref_normalize'" >&2; exit 1 ;; esac
if [ $ref_normalize == true ] && [ -z "$words" ]; then
  echo "$0: --ref-normalize true needs --words (the words.txt of train_units.sh --lang)" >&2
  exit 1
fi
for f in "$units/units.model" "$data/feats.scp" "$data/text" "$nnet" ${words:+"$words"}; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
if ! [[ $beam_size =~ ^[0-9]+$ ]]; then
  echo "$0: --beam-size must be 0 or a positive integer, got '$beam_size'" >&2; exit 1
fi
name=greedy; [ "$beam_size" -gt 0 ] && name=beam$beam_size

mkdir -p "$dir/log"
nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
"$utils/split_data.sh" "$data" $nj
sdata=$data/split$nj
rm -f "$dir"/hyp.*.txt "$dir/wer_$name"
# shellcheck disable=SC2086
$cmd JOB=1:$nj "$dir/log/decode_$name.JOB.log" \
  set -o pipefail \; \
  forward.py --class-frame-counts= --output-rate=model --device=$device "$nnet" "$sdata/JOB" ark:- \| \
  decode_ctc_greedy.py --beam-size=$beam_size "$units/units.model" ark:- \
    "ark,t:$dir/hyp.JOB.txt" \
  || { echo "$0: decoding failed; see $dir/log/decode_$name.*.log" >&2; exit 1; }
cat "$dir"/hyp.*.txt | sort > "$dir/hyp.txt"
rm -f "$dir"/hyp.*.txt
[ -n "$words" ] && mkdir -p "$dir/scoring"
sed -e 's:<NOISE>::g' -e 's:<SPOKEN_NOISE>::g' "$data/text" | if [ -n "$words" ]; then
  score_reference.py --normalize=$ref_normalize --report-json="$dir/scoring/reference.json" \
    "$words" - "$dir/test_filt.txt"
else cat > "$dir/test_filt.txt"; fi
compute_wer.py --text --mode=present "ark:$dir/test_filt.txt" "ark:$dir/hyp.txt" \
  > "$dir/wer_$name"
echo "$0: $name decoding of $data: $(grep WER "$dir/wer_$name") ($dir/wer_$name)"
