#!/usr/bin/env bash
# Denominator lattices for sequence-discriminative training, with Kaldi nnet1's
# steps/nnet/make_denlats.sh interface and defaults: a unigram LM of the data's transcripts
# over <lang-dir>'s words (utils/make_ngram_lm.sh --order=1, utils/format_lm.sh into
# <denlats-dir>/lang), its graph with the network's tree and transition model
# (utils/mkgraph.sh into <denlats-dir>/dengraph), then the network's lattices of every
# utterance (forward.py piped into Kaldi's latgen-faster-mapped when on PATH, else the
# toolkit's latgen_faster_mapped.py): <denlats-dir>/lat.JOB.gz, acoustic costs unscaled, as
# Kaldi writes them. final.mdl is copied beside them (steps/nnet/train_mpe.sh reads it).
# Resumable: each job writes lat.JOB.gz.tmp and renames it when done; a rerun makes only the
# missing ones (and the graph only when it is missing or older than the network).

# Begin configuration section.
nj=4
cmd=run.pl
nnet=               # non-default network (default: <nnet-dir>/final.nnet)
class_frame_counts= # non-default pdf counts (default: <nnet-dir>/ali_train_pdf.counts)
beam=13.0
lattice_beam=7.0
acwt=0.1
max_active=5000
min_active=200
max_mem=20000000    # lattice determinization memory (bytes), as nnet1's
prior_scale=        # scale of the log-priors (empty: forward.py's, 1.0)
num_threads=1       # CPU threads per job (forward.py)
device=cpu          # cpu|cuda|auto: where the network runs
use_lang_g=false    # true: the graph of <lang-dir>'s own G.fst instead of a unigram LM
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v forward.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir> <nnet-dir> <denlats-dir>
 ... where <nnet-dir> holds final.nnet, final.mdl, tree and ali_train_pdf.counts
 (what steps/nnet/train.sh leaves).
 e.g.: $0 --nj 4 --acwt 0.1 data/train data/lang exp/blstm exp/blstm_denlats
Options:
  --nj <nj>                    # number of parallel jobs (default: $nj)
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --nnet <file>                # network (default: <nnet-dir>/final.nnet)
  --beam <float>               # decoding beam (default: $beam)
  --lattice-beam <float>       # lattice pruning beam (default: $lattice_beam)
  --acwt <float>               # acoustic scale (default: $acwt)
  --max-active <int>           # (default: $max_active)
  --use-lang-g true|false      # the lang dir's G.fst instead of a unigram (default: $use_lang_g)
  --device cpu|cuda|auto       # where the network runs (default: $device)
USAGE
  exit 1
fi

data=$1
lang=$2
srcdir=$3
dir=$4
utils=$(cd "$(dirname "$0")/../../utils" && pwd)

[ -z "$nnet" ] && nnet=$srcdir/final.nnet
[ -z "$class_frame_counts" ] && class_frame_counts=$srcdir/ali_train_pdf.counts
for f in "$data/feats.scp" "$data/text" "$lang/L.fst" "$lang/words.txt" "$lang/oov.txt" \
         "$nnet" "$srcdir/final.mdl" "$srcdir/tree" "$class_frame_counts"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
if [ "$use_lang_g" == true ] && [ ! -f "$lang/G.fst" ]; then
  echo "$0: --use-lang-g true but $lang has no G.fst" >&2; exit 1
fi
case $nj in ''|*[!0-9]*|0) echo "$0: --nj must be a positive integer (got '$nj')" >&2; exit 1 ;; esac

mkdir -p "$dir/log"
cp "$srcdir/final.mdl" "$dir/final.mdl.tmp" && mv "$dir/final.mdl.tmp" "$dir/final.mdl"

# 1) the denominator graph: a unigram LM of the transcripts (nnet1: make_unigram_grammar.pl)
if [ -s "$dir/dengraph/HCLG.fst" ] && [ "$dir/dengraph/HCLG.fst" -nt "$srcdir/final.mdl" ] \
   && [ "$dir/dengraph/HCLG.fst" -nt "$data/text" ]; then
  echo "$0: $dir/dengraph is already made: skipping"
else
  if [ "$use_lang_g" == true ]; then
    utils/mkgraph.sh "$lang" "$srcdir" "$dir/dengraph" > "$dir/log/mkgraph.log" 2>&1 || {
      echo "$0: utils/mkgraph.sh failed; see $dir/log/mkgraph.log" >&2; exit 1; }
  else
    echo "$0: unigram LM of $data/text over $lang's words, and its graph"
    "$utils/make_ngram_lm.sh" --order=1 --has-utt-ids=true --vocab="$lang/words.txt" \
      --oov-symbol="$(cat "$lang/oov.txt")" "$data/text" "$dir/lang_unigram.arpa.gz" \
      > "$dir/log/make_unigram.log" 2>&1 || {
      echo "$0: the unigram LM failed; see $dir/log/make_unigram.log" >&2; exit 1; }
    "$utils/format_lm.sh" "$lang" "$dir/lang_unigram.arpa.gz" /dev/null "$dir/lang" \
      >> "$dir/log/make_unigram.log" 2>&1 || {
      echo "$0: utils/format_lm.sh failed; see $dir/log/make_unigram.log" >&2; exit 1; }
    "$utils/mkgraph.sh" "$dir/lang" "$srcdir" "$dir/dengraph" > "$dir/log/mkgraph.log" 2>&1 || {
      echo "$0: utils/mkgraph.sh failed; see $dir/log/mkgraph.log" >&2; exit 1; }
  fi
fi

# 2) the lattices, one archive per job; the jobs already done (lat.JOB.gz newer than the
# network and the graph) are kept and skip themselves
nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
sdata=$data/split$nj
[[ -d $sdata && $data/feats.scp -ot $sdata ]] || "$utils/split_data.sh" "$data" $nj
echo $nj > "$dir/num_jobs"
todo=0
for n in $(seq 1 $nj); do
  if [ -s "$dir/lat.$n.gz" ] && [ "$dir/lat.$n.gz" -nt "$nnet" ] \
     && [ "$dir/lat.$n.gz" -nt "$dir/dengraph/HCLG.fst" ]; then continue; fi
  rm -f "$dir/lat.$n.gz"
  todo=$((todo + 1))
done
if [ $todo -eq 0 ]; then
  echo "$0: all $nj lattice archives of $dir are made: nothing to do"
  exit 0
fi
latgen=latgen_faster_mapped.py
command -v latgen-faster-mapped >/dev/null 2>&1 && latgen=latgen-faster-mapped
echo "$0: denominator lattices of $data with $nnet ($latgen, $todo of $nj jobs to run)"
forward_opts=(--class-frame-counts="$class_frame_counts" ${prior_scale:+--prior-scale=$prior_scale}
              --transition-model="$srcdir/final.mdl" --device=$device)
latgen_opts=(--beam=$beam --lattice-beam=$lattice_beam --acoustic-scale=$acwt
             --max-active=$max_active --min-active=$min_active --max-mem=$max_mem
             --word-symbol-table="$dir/dengraph/words.txt")
start=$(date +%s)
# pipefail: a failing forward.py fails the job; the archive is renamed once complete
# shellcheck disable=SC2086
if ! $cmd JOB=1:$nj "$dir/log/decode_den.JOB.log" \
    if \[ -s "$dir/lat.JOB.gz" \] \; then echo "$dir/lat.JOB.gz is already made" \; else \
    set -o pipefail \; \
    OMP_NUM_THREADS=$num_threads forward.py "${forward_opts[@]}" "$nnet" "$sdata/JOB" ark:- \| \
    $latgen "${latgen_opts[@]}" "$dir/final.mdl" "$dir/dengraph/HCLG.fst" ark:- \
      "ark:|gzip -c > $dir/lat.JOB.gz.tmp" \&\& mv "$dir/lat.JOB.gz.tmp" "$dir/lat.JOB.gz" \; fi; then
  echo "$0: lattice generation failed; see $dir/log/decode_den.*.log:" >&2
  grep -ihE "error|exception" "$dir"/log/decode_den.*.log | tail -n 3 >&2 || true
  exit 1
fi
elapsed=$(( $(date +%s) - start ))
echo "{\"jobs\": $nj, \"jobs_run\": $todo, \"seconds\": $elapsed, \"beam\": $beam, \"lattice_beam\": $lattice_beam, \"acwt\": $acwt, \"max_active\": $max_active, \"decoder\": \"$latgen\"}" \
  > "$dir/denlats.json.tmp" && mv "$dir/denlats.json.tmp" "$dir/denlats.json"
echo "$0: done: denominator lattices of $data in $dir ($elapsed s)"
