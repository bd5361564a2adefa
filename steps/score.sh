#!/usr/bin/env bash
# Scores a decode dir for a range of LM weights (acoustic scale 1/LMWT) and word insertion
# penalties, like Kaldi's steps/score_kaldi.sh: <decode-dir>/wer_LMWT_WIP in compute-wer's format
# and <decode-dir>/scoring/penalty_WIP/LMWT.tra (word ids) for each penalty WIP (by default
# 0.0,0.5,1.0, score_kaldi.sh's), the best (LMWT, WIP) being the dir's WER; with one penalty
# (--word-ins-penalty 0.0, or scoring that re-decodes 1-best) <decode-dir>/wer_LMWT and
# scoring/LMWT.tra, as Kaldi's older local/score.sh; <decode-dir>/scoring/test_filt.txt (the
# filtered reference).
# Lattices (lat.*.gz, Kaldi's or latgen_faster_mapped.py's) are rescored with Kaldi's lattice
# tools when they are on PATH, else in one pass by lattice_best_path_sweep.py (which also writes
# <decode-dir>/decode_summary.json: lattice density, oracle WER). The embedded decoder's output
# (loglikes.*.scp) is turned into lat.JOB.gz once by latgen_faster_mapped.py and swept (the
# default where the toolkit's C++ lattice decoder is built), or, with --lattices false or
# without a C++ compiler (one warning says so), decoded again once per LM weight with
# decode_faster_mapped.py. The 1-best files are scored in one process for every (LMWT, WIP)
# (compute_wer_sweep.py, the same files as compute_wer.py's; its log scoring/log/score_sweep.log),
# or, where the recipe has a local/wer_hyp_filter or local/wer_output_filter, a job each
# (scoring/log/score.LMWT.WIP.log), as Kaldi's.

# Begin configuration section.
cmd=run.pl
stage=0
min_lmwt=4            # hybrid models want low LM weights (Kaldi nnet1 sweeps 4..15)
max_lmwt=15
ref_normalize=false   # true: reference words outside words.txt read as alignment reads them
                      # (lower-cased, without punctuation); false: as given, as Kaldi scores
word_ins_penalty=     # comma-separated; several give wer_LMWT_WIP, scoring/penalty_WIP/LMWT.tra.
                      # Default: 0.0,0.5,1.0 on lattices (Kaldi's score_kaldi.sh), 0.0 where
                      # scoring re-decodes 1-best (no lattices: no penalty there)
lattices=auto         # auto: the decode dir's lat.1.gz, else made from loglikes.*.scp when the
                      # toolkit's C++ lattice decoder is built, else (with a warning) 1-best
                      # re-decoding | true: lattices (an error without the C++ one) |
                      # false: 1-best re-decoding
latgen_beam=          # embedded lattice generation: --beam (default: --beam, as Kaldi's nnet1)
lattice_beam=8.0      # (docs/lattice_sweep.md)
model=                # embedded: transition model (default: <decode-dir>/../final.mdl)
beam=13.0             # embedded decoding (lattices or re-decoding): search options
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
  --word-ins-penalty <list>    # word insertion penalties, lattices only (default: 0.0,0.5,1.0
                               # on lattices, as Kaldi's score_kaldi.sh; 0.0 without them)
  --ref-normalize true|false   # reference words outside words.txt read as alignment reads
                               # them (default: $ref_normalize, Kaldi's: as given)
  --lattices auto|true|false   # lattices (decode once) or 1-best re-decoding (default: $lattices)
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
# the reference, without noise markers (as Kaldi's recipes filter it), then through the recipe's
# local/wer_ref_filter (else local/wer_output_filter) where it has one, as Kaldi's
# steps/scoring/score_kaldi_wer.sh; hypotheses through local/wer_hyp_filter (else
# local/wer_output_filter)
ref_filter=cat; hyp_filter=cat
[ -x local/wer_output_filter ] && ref_filter=local/wer_output_filter && hyp_filter=local/wer_output_filter
[ -x local/wer_ref_filter ] && ref_filter=local/wer_ref_filter
[ -x local/wer_hyp_filter ] && hyp_filter=local/wer_hyp_filter
# its words outside words.txt are counted (scoring/reference.json); --ref-normalize true reads
# them as alignment does (lower-cased, without punctuation, where that is in words.txt)
sed -e 's:<NOISE>::g' -e 's:<SPOKEN_NOISE>::g' "$data/text" | $ref_filter | \
  score_reference.py --normalize=$ref_normalize --report-json="$dir/scoring/reference.json" \
    "$symtab" - "$dir/scoring/test_filt.txt" 2> "$dir/scoring/log/reference.log" || {
  cat "$dir/scoring/log/reference.log" >&2; exit 1; }
counts=($(json_get.py "$dir/scoring/reference.json" words outside_vocabulary normalizable))
n_words=${counts[0]} n_outside=${counts[1]} n_norm=${counts[2]}
if [ "$n_norm" -gt 0 ] && ! $ref_normalize; then
  echo "$0: warning: $n_outside of the $n_words reference words are not in $symtab, $n_norm of" \
    "them only by case or punctuation: each is an error whatever the model (as Kaldi scores)." \
    "--ref-normalize true reads them as alignment does (scoring/reference.json)" >&2
fi

# tra_of <wip>: the pattern of the 1-best files of a penalty (with LMWT)
tra_of() { if [ "$pens" = "$1" ]; then echo "$dir/scoring/LMWT.tra"; else echo "$dir/scoring/penalty_$1/LMWT.tra"; fi; }
# wer files are written into scoring/wer_new/ and replace <decode-dir>/wer_* only once every LM
# weight is scored: a kill while scoring leaves no partial set that looks scored (the recipe
# scores again)
wer_of() { if [ "$pens" = "$1" ]; then echo "$dir/scoring/wer_new/wer_LMWT"; else echo "$dir/scoring/wer_new/wer_LMWT_$1"; fi; }
case $lattices in auto|true|false) ;; *) echo "$0: bad --lattices $lattices (auto|true|false)" >&2; exit 1 ;; esac
make_lattices=false
if [ ! -f "$dir/lat.1.gz" ] && [ -f "$dir/loglikes.1.scp" ] && [ $lattices != false ]; then
  if why=$("$utils/lattice_decoder_built.sh" 2>&1); then
    make_lattices=true
  elif [ $lattices = true ]; then
    echo "$0: --lattices true: $why (use --lattices auto or false: 1-best re-decoding)" >&2; exit 1
  else
    echo "$0: warning: $why: scoring decodes again once per LM weight (as --lattices false)" >&2
  fi
fi
if $make_lattices; then
  fst=$lang_or_graph/HCLG.fst
  [ -z "$model" ] && model=$(dirname "$dir")/final.mdl
  for f in "$fst" "$model"; do
    [ ! -f "$f" ] && echo "$0: lattice generation needs $f (the graph dir and the model)" >&2 && exit 1
  done
  nj=$(ls "$dir"/loglikes.*.scp | wc -l)
  $cmd JOB=1:$nj "$dir/log/latgen.JOB.log" \
    latgen_faster_mapped.py --beam=${latgen_beam:-$beam} --lattice-beam=$lattice_beam \
      --max-active=$max_active --min-active=$min_active --acoustic-scale=0.1 \
      --allow-partial=true "$model" "$fst" "scp:$dir/loglikes.JOB.scp" "ark:|gzip -c > $dir/lat.JOB.gz"
fi
if [ -f "$dir/lat.1.gz" ] && [ $lattices = false ] && [ -f "$dir/loglikes.1.scp" ]; then
  use_lattices=false
elif [ -f "$dir/lat.1.gz" ]; then
  use_lattices=true
else
  use_lattices=false
fi
if [ -z "$word_ins_penalty" ]; then  # the default: Kaldi's sweep where lattices hold the choice
  if $use_lattices; then word_ins_penalty=0.0,0.5,1.0; else word_ins_penalty=0.0; fi
fi
pens=${word_ins_penalty//,/ }

if [ $stage -le 0 ]; then
  if $use_lattices && command -v lattice-best-path >/dev/null 2>&1 && \
      command -v lattice-scale >/dev/null 2>&1 && command -v lattice-add-penalty >/dev/null 2>&1; then
    for wip in $pens; do
      tra=$(tra_of $wip)
      mkdir -p "$(dirname "$tra")"
      $cmd LMWT=$min_lmwt:$max_lmwt "$dir/scoring/log/best_path.LMWT.$wip.log" \
        lattice-scale --inv-acoustic-scale=LMWT "ark:gunzip -c $dir/lat.*.gz|" ark:- \| \
        lattice-add-penalty --word-ins-penalty=$wip ark:- ark:- \| \
        lattice-best-path --word-symbol-table="$symtab" ark:- "ark,t:$tra"
    done
  elif $use_lattices; then
    pattern=$dir/scoring/LMWT.tra
    [ "${pens// /}" != "$pens" ] && pattern=$dir/scoring/penalty_WIP/LMWT.tra
    lattice_best_path_sweep.py --min-lmwt=$min_lmwt --max-lmwt=$max_lmwt \
      --word-ins-penalty=$word_ins_penalty --oracle-reference="$dir/scoring/test_filt.txt" \
      --word-symbol-table="$symtab" --summary-json="$dir/decode_summary.json" \
      "ark:gunzip -c $dir/lat.*.gz|" "$pattern" 2> "$dir/scoring/log/best_path_sweep.log" || \
      { echo "$0: lattice_best_path_sweep.py failed; see $dir/scoring/log/best_path_sweep.log" >&2; exit 1; }
  elif [ -f "$dir/loglikes.1.scp" ]; then
    if [ "${pens// /}" != "$pens" ] || [ "$pens" != "0.0" ]; then
      echo "$0: --word-ins-penalty needs lattices (use --lattices true)" >&2; exit 1
    fi
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
    echo "$0: $dir has neither lattices (lat.1.gz) nor log-likelihoods (loglikes.1.scp)" >&2
    exit 1
  fi
fi

if [ $stage -le 1 ]; then
  rm -rf "$dir/scoring/wer_new"
  mkdir -p "$dir/scoring/wer_new"
  if [ "$hyp_filter" == cat ]; then
    # every (LMWT, WIP) in one process: the 1-best files as one stream keyed <set>|<utt>
    # (the set: what follows wer_ in its wer file's name), through the same int2sym and sed,
    # scored by compute_wer_sweep.py as compute_wer.py scores each (a process a file cost 4 of
    # the 5 s of scoring a 20-utterance set); with a local hyp filter, which may read the
    # keys, a job a file as Kaldi's score.sh
    names=(); tras=()
    for wip in $pens; do
      w=$(wer_of $wip); t=$(tra_of $wip)
      for lmwt in $(seq $min_lmwt $max_lmwt); do
        names+=("${w//LMWT/$lmwt}"); names[-1]=${names[-1]##*/wer_}; tras+=("${t//LMWT/$lmwt}")
      done
    done
    sets=$(IFS=,; echo "${names[*]}")
    for i in "${!names[@]}"; do sed "s:^:${names[i]}|:" "${tras[i]}"; done | \
      "$utils/int2sym.pl" -f 2- "$symtab" | sed 's:\<UNK\>::g' | \
      compute_wer_sweep.py --text --mode=present --sets="$sets" \
        "ark:$dir/scoring/test_filt.txt" ark,p:- "$dir/scoring/wer_new/wer_SET" \
        2> "$dir/scoring/log/score_sweep.log" || \
      { echo "$0: scoring failed; see $dir/scoring/log/score_sweep.log" >&2; exit 1; }
  else
    for wip in $pens; do
      $cmd LMWT=$min_lmwt:$max_lmwt "$dir/scoring/log/score.LMWT.$wip.log" \
        cat "$(tra_of $wip)" \| \
        "$utils/int2sym.pl" -f 2- "$symtab" \| sed 's:\<UNK\>::g' \| $hyp_filter \| \
        compute_wer.py --text --mode=present "ark:$dir/scoring/test_filt.txt" ark,p:- ">&" "$(wer_of $wip)"
    done
  fi
  rm -f "$dir"/wer_*
  mv "$dir"/scoring/wer_new/wer_* "$dir"/
  rmdir "$dir/scoring/wer_new"
fi

best=$(grep WER "$dir"/wer_* | "$utils/best_wer.sh")
echo "$0: best: $best"
best_lmwt=$(echo "$best" | sed -E 's:^.*/wer_([0-9]+)(_[^:]*)?\:.*$:\1:')
if [ "$best_lmwt" = "$min_lmwt" ] && [ "$min_lmwt" -gt 1 ] || [ "$best_lmwt" = "$max_lmwt" ]; then
  echo "$0: warning: the best LM weight ($best_lmwt) is at an end of the range $min_lmwt..$max_lmwt: widen it (--min-lmwt/--max-lmwt)" >&2
fi
