#!/usr/bin/env bash
# Writes <data-dir>/utt2num_frames ("utt num-frames"), as Kaldi's utils/data/get_utt2num_frames.sh:
# from the matrix headers of feats.scp (pybin/feat_to_len.py in $nj parallel jobs), or, when
# there are no features yet, from utt2dur (int((duration - frame_overlap) / frame_shift)).
# Nothing is done when utt2num_frames is already there.

# Begin configuration section.
cmd=run.pl
nj=4                 # at most this many jobs (and no more than there are speakers)
frame_shift=0.01     # seconds; used only without feats.scp
frame_overlap=0.015  # window length - frame shift, seconds; used only without feats.scp
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

root=$(cd -P "$(dirname "$(readlink -f "$0")")/../.." && pwd -P)
[ -f path.sh ] && . ./path.sh
command -v feat_to_len.py >/dev/null 2>&1 || { export HYBRIDASR_ROOT=$root; . "$root/path.sh"; }
. "$root/utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 1 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir>
 e.g.: $0 --nj 4 data/train
Options:
  --nj <nj>                  # number of parallel jobs (default: $nj)
  --cmd <run.pl|slurm.pl>    # how to run jobs (default: $cmd)
  --frame-shift <seconds>    # without feats.scp: frame shift (default: $frame_shift)
  --frame-overlap <seconds>  # without feats.scp: window length - frame shift (default: $frame_overlap)
USAGE
  exit 1
fi

data=$1

[ -d "$data" ] || { echo "$0: no such directory $data" >&2; exit 1; }
[ -f "$data/utt2spk" ] || { echo "$0: no such file $data/utt2spk" >&2; exit 1; }

if [ -s "$data/utt2num_frames" ]; then
  echo "$0: $data/utt2num_frames already present!"
  exit 0
fi

if [ ! -f "$data/feats.scp" ]; then
  echo "$0: no $data/feats.scp: computing frame counts from utt2dur"
  "$root/utils/data/get_utt2dur.sh" --nj "$nj" --cmd "$cmd" "$data"
  awk -v fs="$frame_shift" -v fovlp="$frame_overlap" \
    '{ print $1, int(($2 - fovlp) / fs) }' "$data/utt2dur" > "$data/utt2num_frames.tmp"
  mv "$data/utt2num_frames.tmp" "$data/utt2num_frames"
  echo "$0: computed $data/utt2num_frames"
  exit 0
fi

num_spk=$(wc -l < "$data/spk2utt" 2>/dev/null || "$root/utils/utt2spk_to_spk2utt.pl" "$data/utt2spk" | wc -l)
[ "$nj" -gt "$num_spk" ] && nj=$num_spk
mkdir -p "$data/log"
"$root/utils/split_data.sh" "$data" "$nj"
sdata=$data/split$nj

$cmd JOB=1:"$nj" "$data/log/get_utt2num_frames.JOB.log" \
  feat_to_len.py "scp:$sdata/JOB/feats.scp" "ark,t:$sdata/JOB/utt2num_frames"

for n in $(seq "$nj"); do cat "$sdata/$n/utt2num_frames"; done \
  | LC_ALL=C sort -k1,1 > "$data/utt2num_frames.tmp"
n_in=$(wc -l < "$data/feats.scp"); n_out=$(wc -l < "$data/utt2num_frames.tmp")
if [ "$n_in" -ne "$n_out" ]; then
  echo "$0: $n_out frame counts for $n_in lines of $data/feats.scp; see $data/log/get_utt2num_frames.*.log" >&2
  rm -f "$data/utt2num_frames.tmp"
  exit 1
fi
mv "$data/utt2num_frames.tmp" "$data/utt2num_frames"
echo "$0: computed and wrote $data/utt2num_frames"
