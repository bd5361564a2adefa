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
beam=10
retry_beam=40
acoustic_scale=0.1     # Kaldi's scale_opts: --transition-scale=1.0 --acoustic-scale=0.1
transition_scale=1.0   #   --self-loop-scale=0.1
self_loop_scale=0.1
prior_scale=1.0
device=cpu             # cpu|cuda|auto, where the network runs
num_threads=1          # CPU threads per job (OMP_NUM_THREADS of forward.py): jobs run side by
                       # side, as Kaldi's; torch's default (all cores) per job was 60x slower here
use_gpu=               # nnet1's spelling (no=cpu, yes=cuda, optional=auto): warns
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
  --beam <float>               # alignment beam (default: $beam)
  --retry-beam <float>         # beam of the second try (default: $retry_beam)
  --device cpu|cuda|auto       # where the network runs (default: $device)
  --num-threads <n>            # CPU threads per job (default: $num_threads)
  --nnet <file>                # network (default: <nnet-dir>/final.nnet)
USAGE
  exit 1
fi

data=$1
lang=$2
srcdir=$3
dir=$4

if [ -n "$use_gpu" ]; then
  case $use_gpu in
    no) device=cpu ;; yes) device=cuda ;; optional|wait) device=auto ;;
    *) echo "$0: bad --use-gpu $use_gpu (no|yes|optional)" >&2; exit 1 ;;
  esac
  echo "$0: warning: --use-gpu is deprecated: use --device (--use-gpu $use_gpu is --device $device)" >&2
fi
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

sdata=$data/split$nj
[[ -d $sdata && $data/feats.scp -ot $sdata ]] || "$utils/split_data.sh" "$data" $nj
rm -f "$dir"/ali.*.gz "$dir"/log/align_report.*.json

echo "$0: aligning $data with $nnet ($nj jobs)"
# pipefail: a failing forward.py fails the job
# shellcheck disable=SC2086
if ! $cmd JOB=1:$nj "$dir/log/align.JOB.log" \
    set -o pipefail \; \
    OMP_NUM_THREADS=$num_threads forward.py --class-frame-counts="$class_frame_counts" --prior-scale=$prior_scale \
      --transition-model="$dir/final.mdl" --device=$device "$nnet" "$sdata/JOB" ark:- \| \
    align_mapped.py --beam=$beam --retry-beam=$retry_beam --acoustic-scale=$acoustic_scale \
      --transition-scale=$transition_scale --self-loop-scale=$self_loop_scale \
      --report="$dir/log/align_report.JOB.json" \
      "$dir/tree" "$dir/final.mdl" "$lang" ark:- "ark:$sdata/JOB/text" \
      "ark:|gzip -c > $dir/ali.JOB.gz"; then
  echo "$0: alignment failed; see $dir/log/align.*.log:" >&2
  grep -ihE "error|exception" "$dir"/log/align.*.log | tail -n 3 >&2 || true
  exit 1
fi
echo $nj > "$dir/num_jobs"

utts=0; aligned=0; failed=0; no_text=0; oov=0; frames=0
for n in $(seq $nj); do
  read -r -d '' u a f t o fr <<< "$(json_get.py "$dir/log/align_report.$n.json" utterances \
    aligned num_failed num_no_transcript oov_words frames)" || true
  utts=$((utts + u)); aligned=$((aligned + a)); failed=$((failed + f))
  no_text=$((no_text + t)); oov=$((oov + o)); frames=$((frames + fr))
done
echo "$0: aligned $aligned of $utts utterances ($frames frames) into $dir; $failed failed" \
     "(both beams), $no_text without transcript; $oov transcript words mapped to the OOV word" \
     "(per job: $dir/log/align_report.JOB.json)"
