#!/usr/bin/env bash
# Computes MFCC features for a Kaldi data dir, as Kaldi's steps/make_mfcc.sh does (same options,
# same outputs): <feat-dir>/raw_mfcc_<data>.<n>.ark/.scp, <data-dir>/feats.scp,
# utt2num_frames, utt2dur and per-job logs. Works on segments files too.

# Begin configuration section.
nj=4
cmd=run.pl
mfcc_config=conf/mfcc.conf
compress=true
write_utt2num_frames=true  # write <data-dir>/utt2num_frames
write_utt2dur=true         # write <data-dir>/utt2dur
max_skipped_fraction=0.05  # a job fails when more than this fraction of its utterances fail
seed=0                     # dither seed (per utterance, so results do not depend on --nj)
feat_type=mfcc             # mfcc or fbank (steps/make_fbank.sh calls this script with fbank)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v compute_${feat_type}_feats.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  cat >&2 <<USAGE
Usage: steps/make_${feat_type}.sh [options] <data-dir> [<log-dir> [<${feat_type}-dir>] ]
 e.g.: steps/make_${feat_type}.sh --nj 4 --${feat_type}-config conf/${feat_type}.conf data/train exp/make_${feat_type}/train ${feat_type}
Note: <log-dir> defaults to <data-dir>/log, and <${feat_type}-dir> defaults to <data-dir>/data.
Options:
  --${feat_type}-config <config-file>  # options of compute_${feat_type}_feats.py (default: conf/${feat_type}.conf)
  --nj <nj>                         # number of parallel jobs (default: $nj)
  --cmd <run.pl|queue.pl <args>>    # how to run jobs (default: $cmd)
  --compress <true|false>           # write Kaldi compressed matrices (default: $compress)
  --write-utt2num-frames <true|false>  # write utt2num_frames (default: $write_utt2num_frames)
  --write-utt2dur <true|false>      # write utt2dur (default: $write_utt2dur)
  --seed <n>                        # dither seed (default: $seed)
USAGE
  exit 1
fi

case $feat_type in mfcc|fbank) ;; *) echo "$0: bad --feat-type $feat_type" >&2; exit 1;; esac
data=$1
logdir=${2:-$data/log}
mfccdir=${3:-$data/data}
name=$(basename "$data")

for f in "$data/wav.scp" "$data/utt2spk" "$mfcc_config"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done

mkdir -p "$mfccdir" "$logdir"

if [ -f "$data/feats.scp" ]; then
  mkdir -p "$data/.backup"
  echo "$0: moving $data/feats.scp to $data/.backup"
  mv "$data/feats.scp" "$data/.backup/"
fi

vtln_opts=()
if [ -f "$data/spk2warp" ]; then
  echo "$0 [info]: using VTLN warp factors from $data/spk2warp"
  vtln_opts=(--vtln-map=ark:"$data/spk2warp" --utt2spk=ark:"$data/utt2spk")
elif [ -f "$data/utt2warp" ]; then
  echo "$0 [info]: using VTLN warp factors from $data/utt2warp"
  vtln_opts=(--vtln-map=ark:"$data/utt2warp")
fi

# Split by utterance (by segment with a segments file), as Kaldi's make_mfcc.sh splits wav.scp /
# segments with split_scp.pl: --nj may exceed the number of speakers, not the utterances.
nu=$(wc -l < "$data/utt2spk")
if [ "$nj" -gt "$nu" ]; then
  echo "$0: $data has only $nu utterances: using --nj $nu instead of $nj"
  nj=$nu
fi
"$(dirname "$0")/../utils/split_data.sh" --per-utt "$data" "$nj"
sdata=$data/split${nj}utt

segments_opt=()
[ -f "$data/segments" ] && segments_opt=(--segments="$sdata/JOB/segments")

$cmd JOB=1:"$nj" "$logdir/make_${feat_type}_${name}.JOB.log" \
  compute_${feat_type}_feats.py --verbose=2 --config="$mfcc_config" --compress="$compress" \
    --seed="$seed" --max-skipped-fraction="$max_skipped_fraction" \
    "${vtln_opts[@]}" "${segments_opt[@]}" \
    --write-num-frames=ark,t:"$logdir/utt2num_frames.JOB" \
    --write-utt2dur=ark,t:"$logdir/utt2dur.JOB" \
    scp:"$sdata/JOB/wav.scp" \
    ark,scp:"$mfccdir/raw_${feat_type}_$name.JOB.ark","$mfccdir/raw_${feat_type}_$name.JOB.scp" \
  || { echo "$0: computing $feat_type features failed; see $logdir/make_${feat_type}_${name}.*.log" >&2; exit 1; }

# Concatenate the per-job lists (sorted, as a data dir must be); each appears whole or not at all.
for n in $(seq "$nj"); do cat "$mfccdir/raw_${feat_type}_$name.$n.scp"; done \
  | LC_ALL=C sort -k1,1 > "$data/feats.scp.tmp"
mv "$data/feats.scp.tmp" "$data/feats.scp"
if [ "$write_utt2num_frames" = true ]; then
  for n in $(seq "$nj"); do cat "$logdir/utt2num_frames.$n"; done \
    | LC_ALL=C sort -k1,1 > "$data/utt2num_frames.tmp"
  mv "$data/utt2num_frames.tmp" "$data/utt2num_frames"
fi
if [ "$write_utt2dur" = true ]; then
  for n in $(seq "$nj"); do cat "$logdir/utt2dur.$n"; done \
    | LC_ALL=C sort -k1,1 > "$data/utt2dur.tmp"
  mv "$data/utt2dur.tmp" "$data/utt2dur"
fi
for n in $(seq "$nj"); do rm -f "$logdir/utt2num_frames.$n" "$logdir/utt2dur.$n"; done

nf=$(wc -l < "$data/feats.scp")
if [ "$nf" -ne "$nu" ]; then
  echo "$0: it seems not all of the feature files were successfully processed" \
       "($nf != $nu); consider using utils/fix_data_dir.sh $data" >&2
fi
if [ "$nf" -lt $((nu - nu / 20)) ]; then
  echo "$0: less than 95% of the features were successfully generated." \
       "Probably a serious error." >&2
  exit 1
fi

echo "$0: Succeeded creating $feat_type features for $name"
