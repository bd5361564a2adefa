#!/usr/bin/env bash
# Aligns a data dir with a trained hybridasr network, with Kaldi nnet1's steps/nnet/align.sh
# interface. Per job, forward.py writes the network's scaled log-likelihoods (log-posteriors
# minus the log-priors of <nnet-dir>/ali_train_pdf.counts, as for decoding) and align_mapped.py
# builds each utterance's training graph (the lang dir's L.fst, <nnet-dir>'s tree and final.mdl:
# those of the alignment the network was trained on) and Viterbi-aligns on it (--beam, then
# --retry-beam; an utterance failing both is reported and skipped). Writes a Kaldi alignment dir:
# ali.JOB.gz (binary int32 vectors, gzip), final.mdl, tree, phones.txt, num_jobs, log/
# (align.JOB.log, align_report.JOB.json: aligned, failed, retried, OOV words).

# Begin configuration section.
nj=4
cmd=run.pl
nnet=                  # non-default network (default: <nnet-dir>/final.nnet)
class_frame_counts=    # non-default pdf counts (default: <nnet-dir>/ali_train_pdf.counts)
num_threads=1          # CPU threads per job (OMP_NUM_THREADS of forward.py): jobs run side by
                       # side, as Kaldi's; torch's default (all cores) per job was 60x slower here
# Passed on only when given (empty: the tool's own default, see `align_mapped.py --help` and
# `forward.py --help`):
beam=                  # align_mapped.py: alignment beam
retry_beam=            # align_mapped.py: beam of the second try
acoustic_scale=        # align_mapped.py: Kaldi's scale_opts (--acoustic-scale,
transition_scale=      #   --transition-scale, --self-loop-scale)
self_loop_scale=
prior_scale=           # forward.py: scale of the log-priors
device=                # forward.py: cpu|cuda|auto, where the network runs
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v align_mapped.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir> <nnet-dir> <ali-dir>
 ... where <nnet-dir> holds final.nnet, final.mdl, tree and ali_train_pdf.counts
 (what steps/nnet/train.sh leaves).
 e.g.: $0 --nj 4 data/train data/lang exp/blstm exp/blstm_ali
Options:
  --nj <nj>                    # number of parallel jobs (default: $nj)
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --num-threads <n>            # CPU threads per job (default: $num_threads)
  --nnet <file>                # network (default: <nnet-dir>/final.nnet)
 Passed on only when given (default: the tool's; align_mapped.py --help, forward.py --help):
  --beam <float>               # alignment beam (align_mapped.py)
  --retry-beam <float>         # beam of the second try (align_mapped.py)
  --acoustic-scale, --transition-scale, --self-loop-scale <float>  # (align_mapped.py)
  --prior-scale <float>        # scale of the log-priors (forward.py)
  --device cpu|cuda|auto       # where the network runs (forward.py)
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
for f in "$data/feats.scp" "$data/text" "$lang/L.fst" "$lang/words.txt" "$lang/phones.txt" \
         "$nnet" "$srcdir/final.mdl" "$class_frame_counts"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
if [ ! -f "$srcdir/tree" ]; then
  echo "$0: missing file $srcdir/tree (the tree of the alignment the network was trained on;" \
       "copy it from that Kaldi alignment dir)" >&2
  exit 1
fi

mkdir -p "$dir/log"
# copies, not links: the result must not depend on the source dirs staying as they are
rm -f "$dir/final.mdl" "$dir/tree" "$dir/phones.txt"
cp -L "$srcdir/final.mdl" "$dir/final.mdl"
cp -L "$srcdir/tree" "$dir/tree"
cp -L "$lang/phones.txt" "$dir/phones.txt"

nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
sdata=$data/split$nj
# split_data.sh does nothing when the split is newer than every file of $data (cmvn.scp
# too, which a test of feats.scp alone missed)
"$utils/split_data.sh" "$data" $nj
rm -f "$dir"/ali.*.gz "$dir"/log/align_report.*.json

# the options given, as --name=value (an empty one is left to the tool)
forward_opts=()
for v in prior_scale device; do
  if [ -n "${!v}" ]; then forward_opts+=("--${v//_/-}=${!v}"); fi
done
align_opts=()
for v in beam retry_beam acoustic_scale transition_scale self_loop_scale; do
  if [ -n "${!v}" ]; then align_opts+=("--${v//_/-}=${!v}"); fi
done

echo "$0: aligning $data with $nnet ($nj jobs)"
# pipefail: a failing forward.py fails the job
# shellcheck disable=SC2086
if ! $cmd JOB=1:$nj "$dir/log/align.JOB.log" \
    set -o pipefail \; \
    OMP_NUM_THREADS=$num_threads forward.py --class-frame-counts="$class_frame_counts" \
      ${forward_opts[@]+"${forward_opts[@]}"} \
      --transition-model="$dir/final.mdl" "$nnet" "$sdata/JOB" ark:- \| \
    align_mapped.py ${align_opts[@]+"${align_opts[@]}"} \
      --report="$dir/log/align_report.JOB.json" \
      "$dir/tree" "$dir/final.mdl" "$lang" ark:- "ark:$sdata/JOB/text" \
      "ark:|gzip -c > $dir/ali.JOB.gz"; then
  echo "$0: alignment failed; see $dir/log/align.*.log:" >&2
  grep -ihE "error|exception" "$dir"/log/align.*.log | tail -n 3 >&2 || true
  exit 1
fi
echo $nj > "$dir/num_jobs"

"$utils/align_report.sh" "$0" "$dir"
