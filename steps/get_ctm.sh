#!/usr/bin/env bash
# CTM files of a decode dir with lattices, as Kaldi's steps/get_ctm.sh (and, for the
# confidences, steps/conf/get_ctm_conf.sh): for each LM weight LMWT,
# <decode-dir>/score_LMWT/<data-name>.ctm, "<utt> 1 <start> <dur> <word> <conf>": the words of
# the best path at LMWT with their times (phones grouped by phones/word_boundary.int) and
# their lattice posteriors (pybin/lattice_to_ctm.py). The LM weights: --min-lmwt..--max-lmwt
# when given, else the best of the dir's scoring (wer_LMWT or wer_LMWT_WIP, with its penalty).

# Begin configuration section.
cmd=run.pl
stage=0
frame_shift=0.01    # seconds per lattice frame (times <srcdir>/frame_subsampling_factor if there)
min_lmwt=           # both empty: the best LM weight (and penalty) of <decode-dir>/wer_*
max_lmwt=
word_ins_penalty=   # empty: 0.0, or the best one of the scoring with the best LM weight
beam=5              # lattice-prune beam before the posteriors (get_ctm_conf.sh's)
model=              # default: <decode-dir>/../final.mdl
confidence=frame    # frame: per-frame posteriors of the best path's words; mbr: lattice-to-ctm-conf's
decode_mbr=true     # with --confidence mbr: MBR words (true, get_ctm_conf.sh's) or the best path's
confidence_calibration=  # a calibration JSON (train_confidence_calibration.py) for the confidences
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v lattice_to_ctm.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir|graph-dir> <decode-dir>
 e.g.: $0 data/test exp/mono/graph exp/blstm/decode_test
Options:
  --cmd (run.pl|queue.pl...)   # how to run the jobs (default: $cmd)
  --min-lmwt <int> --max-lmwt <int>  # LM weights (default: the best of the dir's scoring)
  --word-ins-penalty <float>   # (default: 0.0, or the best of the scoring)
  --frame-shift <seconds>      # (default: $frame_shift)
  --beam <float>               # pruning before the posteriors (default: $beam)
  --confidence (frame|mbr)     # per-frame posteriors, or MBR sausage bins (default: $confidence)
  --decode-mbr (true|false)    # with --confidence mbr: MBR words or the best path's (default: $decode_mbr)
  --confidence-calibration <json>  # calibrate the confidences (steps/conf/train_calibration.sh)
USAGE
  exit 1
fi

data=$1
lang=$2
dir=$3
name=$(basename "$data")
[ -z "$model" ] && model=$dir/../final.mdl
wb=$lang/phones/word_boundary.int

for f in "$lang/words.txt" "$model" "$dir/lat.1.gz" $confidence_calibration; do
  [ ! -f "$f" ] && echo "$0: expecting file $f to exist" >&2 && exit 1
done
if [ ! -f "$wb" ]; then
  echo "$0: no $wb: cannot align words (copy phones/ of the lang dir into the graph dir)" >&2
  exit 1
fi
if [ -f "$dir/../frame_subsampling_factor" ]; then
  frame_shift=$(awk -v s=$frame_shift '{print s * $1}' "$dir/../frame_subsampling_factor")
  echo "$0: $dir/../frame_subsampling_factor exists: --frame-shift $frame_shift"
fi

if [ -z "$min_lmwt$max_lmwt" ]; then
  best=$(grep -H WER "$dir"/wer_* 2>/dev/null | "$(dirname "$0")/../utils/best_wer.sh" || true)
  if [ -z "$best" ]; then
    echo "$0: $dir has no wer_* to take the best LM weight from: give --min-lmwt and --max-lmwt" >&2
    exit 1
  fi
  w=$(echo "$best" | sed -E 's:^.*/wer_([0-9.]+)(_([0-9.]+))?\:.*$:\1 \3:')
  min_lmwt=${w%% *}; max_lmwt=$min_lmwt
  [ -z "$word_ins_penalty" ] && word_ins_penalty=${w#* } && [ -z "$word_ins_penalty" ] && word_ins_penalty=0.0
  echo "$0: the best of the scoring: LM weight $min_lmwt, word insertion penalty $word_ins_penalty ($best)"
fi
[ -z "$min_lmwt" ] && min_lmwt=$max_lmwt
[ -z "$max_lmwt" ] && max_lmwt=$min_lmwt
[ -z "$word_ins_penalty" ] && word_ins_penalty=0.0

mkdir -p "$dir/scoring/log"
if [ $stage -le 0 ]; then
  for lmwt in $(seq $min_lmwt $max_lmwt); do mkdir -p "$dir/score_$lmwt"; done
  $cmd LMWT=$min_lmwt:$max_lmwt "$dir/scoring/log/get_ctm.LMWT.log" \
    lattice_to_ctm.py --lm-weight=LMWT --word-ins-penalty=$word_ins_penalty \
      --frame-shift=$frame_shift --prune-beam=$beam \
      --confidence=$confidence --decode-mbr=$decode_mbr \
      ${confidence_calibration:+--confidence-calibration=$confidence_calibration} \
      "$model" "$wb" "$lang/words.txt" \
      "ark:gunzip -c $dir/lat.*.gz|" "$dir/score_LMWT/$name.ctm" \
    || { echo "$0: lattice_to_ctm.py failed; see $dir/scoring/log/get_ctm.*.log" >&2; exit 1; }
fi
echo "$0: CTMs in $dir/score_{$min_lmwt..$max_lmwt}/$name.ctm"
