#!/usr/bin/env bash
# Scores a decode dir for a range of LM weights (acoustic scale 1/LMWT), like Kaldi's
# local/score.sh: <decode-dir>/scoring/LMWT.tra (word ids), <decode-dir>/wer_LMWT in
# compute-wer's format, <decode-dir>/scoring/test_filt.txt (the filtered reference).
# Lattices from Kaldi (lat.*.gz) are rescored with Kaldi's lattice tools; the embedded decoder's
# output (loglikes.*.scp) is decoded again once per LM weight with decode_faster_mapped.py.

# Begin configuration section.
cmd=run.pl
stage=0
min_lmwt=7
max_lmwt=17
word_ins_penalty=0.0  # Kaldi lattices only
model=                # embedded: transition model (default: <decode-dir>/../final.mdl)
beam=13.0             # embedded: decoder options of the re-decoding
max_active=7000
min_active=200
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v decode_faster_mapped.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir|graph-dir> <decode-dir>
 e.g.: $0 --min-lmwt 7 --max-lmwt 17 data/test exp/mono/graph exp/dnn/decode_test
Options:
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --min-lmwt <int>             # smallest LM weight (default: $min_lmwt)
  --max-lmwt <int>             # largest LM weight (default: $max_lmwt)
  --word-ins-penalty <float>   # word insertion penalty, Kaldi lattices only (default: $word_ins_penalty)
  --model <final.mdl>          # embedded decoder: transition model (default: <decode-dir>/../final.mdl)
USAGE
  exit 1
fi

data=$1
lang_or_graph=$2
dir=$3
symtab=$lang_or_graph/words.txt
utils=$(cd "$(dirname "$0")/../utils" && pwd)

for f in "$symtab" "$data/text"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done
if [ "$min_lmwt" -gt "$max_lmwt" ] || [ "$min_lmwt" -le 0 ]; then
  echo "$0: bad LM-weight range $min_lmwt..$max_lmwt" >&2; exit 1
fi

mkdir -p "$dir/scoring/log"
# the reference, without noise markers (as Kaldi's recipes filter it)
sed -e 's:<NOISE>::g' -e 's:<SPOKEN_NOISE>::g' "$data/text" > "$dir/scoring/test_filt.txt"

if [ $stage -le 0 ]; then
  if [ -f "$dir/lat.1.gz" ]; then
    for b in lattice-scale lattice-add-penalty lattice-best-path; do
      command -v $b >/dev/null 2>&1 || { echo "$0: $dir has Kaldi lattices but $b is not on PATH (set KALDI_ROOT)" >&2; exit 1; }
    done
    $cmd LMWT=$min_lmwt:$max_lmwt "$dir/scoring/log/best_path.LMWT.log" \
      lattice-scale --inv-acoustic-scale=LMWT "ark:gunzip -c $dir/lat.*.gz|" ark:- \| \
      lattice-add-penalty --word-ins-penalty=$word_ins_penalty ark:- ark:- \| \
      lattice-best-path --word-symbol-table="$symtab" ark:- "ark,t:$dir/scoring/LMWT.tra"
  elif [ -f "$dir/loglikes.1.scp" ]; then
    fst=$lang_or_graph/HCLG.fst
    [ -z "$model" ] && model=$(dirname "$dir")/final.mdl
    for f in "$fst" "$model"; do
      [ ! -f "$f" ] && echo "$0: embedded scoring needs $f (the graph dir and the model)" >&2 && exit 1
    done
    cat "$dir"/loglikes.*.scp > "$dir/scoring/loglikes.scp"
    $cmd LMWT=$min_lmwt:$max_lmwt "$dir/scoring/log/decode.LMWT.log" \
      decode_faster_mapped.py --inv-acoustic-scale=LMWT --beam=$beam --max-active=$max_active \
        --min-active=$min_active "$model" "$fst" "scp:$dir/scoring/loglikes.scp" \
        "ark,t:$dir/scoring/LMWT.tra"
  else
    echo "$0: $dir has neither Kaldi lattices (lat.1.gz) nor log-likelihoods (loglikes.1.scp)" >&2
    exit 1
  fi
fi

if [ $stage -le 1 ]; then
  $cmd LMWT=$min_lmwt:$max_lmwt "$dir/scoring/log/score.LMWT.log" \
    cat "$dir/scoring/LMWT.tra" \| \
    "$utils/int2sym.pl" -f 2- "$symtab" \| sed 's:\<UNK\>::g' \| \
    compute_wer.py --text --mode=present "ark:$dir/scoring/test_filt.txt" ark,p:- ">&" "$dir/wer_LMWT"
fi

best=$(grep WER "$dir"/wer_* | "$utils/best_wer.sh")
echo "$0: best: $best"
