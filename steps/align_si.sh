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

# Begin configuration section.
nj=4
cmd=run.pl
boost_silence=1.0    # factor of the optional silence's likelihoods (Kaldi's recipes: 1.25)
beam=10
retry_beam=40
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
         "$srcdir/tree"; do
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
rm -f "$dir"/ali.*.gz "$dir"/log/align_report.*.json

echo "$0: aligning $data with $srcdir/final.mdl ($nj jobs, boost-silence $boost_silence)"
if ! $cmd JOB=1:$nj "$dir/log/align.JOB.log" \
    set -o pipefail \; \
    gmm_compute_likes.py --feature-pipeline="$dir" --boost-silence=$boost_silence \
      --silence-phones="$(cat "$lang/phones/optional_silence.csl")" \
      "$dir/final.mdl" "$sdata/JOB" ark:- \| \
    align_mapped.py --beam=$beam --retry-beam=$retry_beam \
      --report="$dir/log/align_report.JOB.json" \
      "$dir/tree" "$dir/final.mdl" "$lang" ark:- "ark:$sdata/JOB/text" \
      "ark:|gzip -c > $dir/ali.JOB.gz"; then
  echo "$0: alignment failed; see $dir/log/align.*.log:" >&2
  grep -ihE "error|exception" "$dir"/log/align.*.log | tail -n 3 >&2 || true
  exit 1
fi
echo $nj > "$dir/num_jobs"

"$utils/align_report.sh" "$0" "$dir"
