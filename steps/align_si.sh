#!/usr/bin/env bash
# Kaldi's steps/align_si.sh for a GMM without speaker adaptation (the toolkit's
# steps/train_mono.sh, a Kaldi mono/tri1 dir of deltas, or an LDA+MLLT one): aligns <data> with
# <src-dir>'s final.mdl and tree on the training graphs of <lang>'s L.fst. Per job,
# gmm_compute_likes.py scores the features of <src-dir>'s pipeline, as Kaldi's script builds
# them (per-speaker CMVN as its cmvn_opts says, then splice_opts + final.mat where it has
# final.mat, else add-deltas with its delta_opts; the pdfs of the optional silence boosted by
# --boost-silence, as gmm-boost-silence) and align_mapped.py
# Viterbi-aligns them with Kaldi's scale_opts (acoustic 0.1, self-loops 0.1) and beams (10,
# retry 40: an utterance failing both is reported and skipped). Writes a Kaldi alignment dir:
# ali.JOB.gz, final.mdl, tree, phones.txt, num_jobs, log/align.JOB.log, align_report.JOB.json.
# With --transform-dir DIR (a SAT GMM: its own alignment dir, holding trans.*), each speaker's
# fMLLR transform of DIR applied after that pipeline, as Kaldi's align_si.sh --transform-dir did
# (Kaldi's align_fmllr.sh estimates them anew instead).
# With --generate-lats true, the lattices of Kaldi's steps/align_fmllr_lats.sh instead (its
# fMLLR: --transform-dir's): latgen_align_mapped.py decodes each utterance on its
# training graph with beam and lattice beam --final-beam (20), determinized on phones only
# (--word-determinize=false: alternative pronunciations and optional silences stay), into
# lat.JOB.gz (no ali.JOB.gz): the numerator of chain training (local/chain/run_tdnn.sh
# --lat-dir). An utterance whose search does not reach its graph's end is reported and skipped.

# Begin configuration section.
nj=4
cmd=run.pl
boost_silence=1.0    # factor of the optional silence's likelihoods (Kaldi's recipes: 1.25)
beam=10
retry_beam=40
generate_lats=false  # true: lat.JOB.gz of the training graphs (align_fmllr_lats.sh's), no ali
final_beam=20        # the lattices' beam and lattice beam (Kaldi's align_fmllr_lats.sh)
normalize_unknown=true # a transcript word not in words.txt looked up lower-cased, without
                     # punctuation; false: the OOV word, as Kaldi's sym2int.pl --map-oov (what
                     # a Kaldi GMM's own alignments, and a chain tree made from them, used)
transform_dir=       # a SAT GMM's fMLLR transforms (trans.*) of this dir, after the pipeline
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v align_mapped.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir> <src-dir> <align-dir>
 e.g.: $0 --boost-silence 1.25 data/train data/lang exp/mono exp/mono_ali
Options:
  --nj <n>                     # parallel jobs, at most one a speaker (default: $nj)
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --boost-silence <factor>     # optional silence's likelihoods (default: $boost_silence)
  --beam, --retry-beam <float> # alignment beams (default: $beam, $retry_beam)
  --generate-lats (true|false) # lattices (lat.JOB.gz) instead of alignments (default: $generate_lats)
  --final-beam <float>         # the lattices' beams (default: $final_beam)
  --normalize-unknown (true|false) # unknown words normalised, else the OOV word (default: $normalize_unknown)
  --transform-dir <dir>        # fMLLR transforms (trans.*) of a SAT GMM, e.g. its alignment dir
 e.g.: $0 --generate-lats true data/train data/lang exp/tri1 exp/tri1_lats
USAGE
  exit 1
fi

data=$1
lang=$2
srcdir=$3
dir=$4

utils=$(cd "$(dirname "$0")/../utils" && pwd)
for f in "$data/feats.scp" "$data/cmvn.scp" "$data/text" "$lang/L.fst" "$lang/words.txt" \
         "$lang/phones.txt" "$lang/phones/optional_silence.csl" "$srcdir/final.mdl" \
         "$srcdir/tree" ${transform_dir:+"$transform_dir/trans.1"}; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
"$utils/lang/check_phones_compatible.sh" "$lang/phones.txt" "$srcdir/phones.txt" || \
  { echo "$0: $srcdir is not a model of $lang's phones" >&2; exit 1; }

mkdir -p "$dir/log"
rm -f "$dir/final.mdl" "$dir/tree" "$dir/phones.txt"
cp -L "$srcdir/final.mdl" "$dir/final.mdl"
cp -L "$srcdir/tree" "$dir/tree"
cp -L "$lang/phones.txt" "$dir/phones.txt"
for f in cmvn_opts delta_opts splice_opts final.mat; do  # (the features' pipeline, as Kaldi's)
  rm -f "$dir/$f"
  [ -f "$srcdir/$f" ] && cp -L "$srcdir/$f" "$dir/$f"
done

nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
sdata=$data/split$nj
"$utils/split_data.sh" "$data" $nj
rm -f "$dir"/ali.*.gz "$dir"/lat.*.gz "$dir"/log/align_report.*.json

if [ "$generate_lats" == true ]; then
  what="lattices of the training graphs (beams $final_beam)"
  search=(latgen_align_mapped.py --beam=$final_beam --lattice-beam=$final_beam)
  out=lat
else
  what="alignments"
  search=(align_mapped.py --beam=$beam --retry-beam=$retry_beam)
  out=ali
fi
echo "$0: $what of $data with $srcdir/final.mdl ($nj jobs, boost-silence $boost_silence${transform_dir:+, fMLLR transforms of $transform_dir})"
if ! $cmd JOB=1:$nj "$dir/log/align.JOB.log" \
    set -o pipefail \; \
    gmm_compute_likes.py --feature-pipeline="$dir" --transform-dir="$transform_dir" \
      --boost-silence=$boost_silence \
      --silence-phones="$(cat "$lang/phones/optional_silence.csl")" \
      "$dir/final.mdl" "$sdata/JOB" ark:- \| \
    "${search[@]}" --normalize-unknown=$normalize_unknown \
      --report="$dir/log/align_report.JOB.json" \
      "$dir/tree" "$dir/final.mdl" "$lang" ark:- "ark:$sdata/JOB/text" \
      "ark:|gzip -c > $dir/$out.JOB.gz"; then
  echo "$0: alignment failed; see $dir/log/align.*.log:" >&2
  grep -ihE "error|exception" "$dir"/log/align.*.log | tail -n 3 >&2 || true
  exit 1
fi
echo $nj > "$dir/num_jobs"

"$utils/align_report.sh" "$0" "$dir"
