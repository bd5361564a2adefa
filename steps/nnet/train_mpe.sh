#!/usr/bin/env bash
# Sequence-discriminative training of a hybridasr network, with Kaldi nnet1's
# steps/nnet/train_mpe.sh interface and defaults: sMBR (--do-smbr true) or MMI (false; nnet1
# gives MPE there), 4 epochs at a small fixed learning rate, from <srcdir>'s network, on the
# denominator lattices of steps/nnet/make_denlats.sh and the numerator alignment <ali-dir>
# (the network's own alignment of the transcripts, steps/nnet/align.sh). The work is
# train.py --objective=smbr|mmi (hybridasr/train/sequence.py) with <srcdir>'s train.conf
# (same model, features and batching), one pass over the data an epoch, and each epoch's
# model kept as <exp-dir>/N.nnet (final.nnet: the last). A cross-validation set (--cv-data,
# default: <data> itself) gives each epoch's held-out objective in metrics.jsonl.
# final.mdl, tree and ali_train_pdf.counts are <srcdir>'s, so the model decodes as the CE one
# did. Run it again to resume an interrupted training.

# Begin configuration section.
cmd=run.pl
num_iters=4
acwt=0.1
lmwt=1.0
learn_rate=0.0003    # Adam's, with --max-frames 5000 (nnet1: 0.00001, per-utterance SGD);
                     # polish: 1e-4 gave -2.6% relative WER, 3e-4 -4.3% (docs/sequence_training.md)
do_smbr=true         # false: MMI
one_silence_class=true # silence frames are correct wherever the numerator is silence too
silphonelist=        # colon-separated silence phone ids (default: <lang>/phones/silence.csl)
frame_smoothing=0.0  # weight of frame cross-entropy in the gradient (Su et al.; 0: none)
drop_frames=true     # MMI: frames whose numerator pdf is not in the lattice get no gradient
max_frames=5000      # frames a batch (whole utterances; train.py --max-frames)
cv_data=             # held-out data dir (its utterances in <ali-dir> and <denlats-dir>)
nnet=                # non-default initial network (default: <srcdir>/final.nnet)
device=              # cpu|cuda|auto (empty: train.py's)
train_opts=          # more train.py options (after the ones above)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v train.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 6 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data> <lang> <srcdir> <ali-dir> <denlats-dir> <exp-dir>
 e.g.: $0 --cv-data data/train_cv10 data/train_tr90 data/lang exp/blstm exp/blstm_ali \\
          exp/blstm_denlats exp/blstm_smbr
Options:
  --cmd <run.pl|queue.pl ...>   # how to run the training job (default: $cmd)
  --num-iters <N>               # epochs (default: $num_iters)
  --acwt <float>                # acoustic scale (default: $acwt)
  --lmwt <float>                # scale of the lattices' graph costs (default: $lmwt)
  --learn-rate <float>          # (default: $learn_rate)
  --do-smbr true|false          # sMBR, or MMI (default: $do_smbr)
  --one-silence-class true|false  # (default: $one_silence_class)
  --frame-smoothing <float>     # CE weight in the gradient (default: $frame_smoothing)
  --cv-data <dir>               # held-out data (default: <data>)
  --device cpu|cuda|auto        # (default: train.py's)
  --train-opts "<opts>"         # more train.py options
USAGE
  exit 1
fi

data=$1
lang=$2
srcdir=$3
ali=$4
denlats=$5
dir=$6
steps=$(cd "$(dirname "$0")/.." && pwd)

[ -z "$nnet" ] && nnet=$srcdir/final.nnet
[ -z "$cv_data" ] && cv_data=$data
[ -z "$silphonelist" ] && [ -f "$lang/phones/silence.csl" ] && silphonelist=$(cat "$lang/phones/silence.csl")
for f in "$data/feats.scp" "$cv_data/feats.scp" "$nnet" "$srcdir/train.conf" \
         "$srcdir/final.mdl" "$srcdir/ali_train_pdf.counts" "$denlats/final.mdl"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
ls "$denlats"/lat.*.gz >/dev/null 2>&1 || { echo "$0: no lattices $denlats/lat.*.gz (steps/nnet/make_denlats.sh)" >&2; exit 1; }
[ -z "$silphonelist" ] && echo "$0: warning: no silence phones ($lang/phones/silence.csl missing): no pdf counts as silence" >&2
case $do_smbr in true) objective=smbr ;; false) objective=mmi ;;
  *) echo "$0: --do-smbr must be true or false (got '$do_smbr')" >&2; exit 1 ;; esac

mkdir -p "$dir/log"
seq_opts="--objective=$objective --seq-denlats=$denlats --seq-transition-model=$denlats/final.mdl"
seq_opts="$seq_opts ${silphonelist:+--seq-silence-phones=$silphonelist} --seq-acwt=$acwt"
seq_opts="$seq_opts --seq-lm-scale=$lmwt --seq-one-silence-class=$one_silence_class"
seq_opts="$seq_opts --seq-frame-smoothing=$frame_smoothing --seq-drop-frames=$drop_frames"
seq_opts="$seq_opts --seq-class-frame-counts=$srcdir/ali_train_pdf.counts"
# nnet1's schedule: a fixed learning rate, every epoch kept, one pass over the data each
seq_opts="$seq_opts --init-model=$nnet --keep-initial-model=true --lr-schedule=constant"
seq_opts="$seq_opts --learning-rate=$learn_rate --max-iters=$num_iters --min-batches-per-epoch=0"
seq_opts="$seq_opts --max-frames=$max_frames"

"$steps/nnet/train.sh" --cmd "$cmd" ${device:+--device $device} \
  --train-config "$srcdir/train.conf" --train-opts "$seq_opts $train_opts" \
  "$data" "$cv_data" "$lang" "$ali" "$ali" "$dir"

# what decoding needs: <srcdir>'s (its priors, as nnet1 copies them)
for f in final.mdl tree ali_train_pdf.counts phones.txt; do
  [ -f "$srcdir/$f" ] && cp -L "$srcdir/$f" "$dir/$f.tmp" && mv "$dir/$f.tmp" "$dir/$f"
done
# nnet1's per-epoch names
for n in $(seq 1 $num_iters); do
  [ -f "$dir/nnet/epoch$n.nnet" ] && ln -sfn "nnet/epoch$n.nnet" "$dir/$n.nnet"
done
echo "$0: done: $objective training of $dir (final.nnet -> $(readlink "$dir/final.nnet")); per-epoch objective in $dir/metrics.jsonl"
