#!/usr/bin/env bash
# Writes <data-dir>/utt2dur ("utt seconds"), as Kaldi's utils/data/get_utt2dur.sh: from segments
# (end - start), else from the audio of wav.scp (headers of plain files; "cmd |" entries are
# run and read) in $nj parallel jobs, else from feats.scp (frames x --frame-shift).
# Nothing is done when utt2dur is already there with a line per utterance.

# Begin configuration section.
cmd=run.pl
nj=4
frame_shift=0.01         # seconds; used only when durations come from feats.scp
read_entire_file=false   # accepted for Kaldi compatibility (pipes are always read whole)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

root=$(cd -P "$(dirname "$(readlink -f "$0")")/../.." && pwd -P)
[ -f path.sh ] && . ./path.sh
command -v data_dir_utt2dur.py >/dev/null 2>&1 || { export HYBRIDASR_ROOT=$root; . "$root/path.sh"; }
. "$root/utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 1 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir>
 e.g.: $0 --nj 4 data/train
Options:
  --nj <nj>                  # number of parallel jobs (default: $nj)
  --cmd <run.pl|slurm.pl>    # how to run jobs (default: $cmd)
  --frame-shift <seconds>    # for durations from feats.scp (default: $frame_shift)
USAGE
  exit 1
fi

data=$1
[ -d "$data" ] || { echo "$0: no such directory $data" >&2; exit 1; }
[ -f "$data/utt2spk" ] || { echo "$0: no such file $data/utt2spk" >&2; exit 1; }

if [ -s "$data/utt2dur" ] && \
   [ "$(wc -l < "$data/utt2dur")" -eq "$(wc -l < "$data/utt2spk")" ]; then
  echo "$0: $data/utt2dur already exists with the expected length.  We won't recompute it."
  exit 0
fi

if [ -f "$data/segments" ] || [ ! -f "$data/wav.scp" ]; then
  data_dir_utt2dur.py --frame-shift="$frame_shift" "$data"
else
  num_utt=$(wc -l < "$data/utt2spk")
  [ "$nj" -gt "$num_utt" ] && nj=$num_utt
  mkdir -p "$data/log"
  "$root/utils/split_data.sh" --per-utt "$data" "$nj"
  sdata=$data/split${nj}utt
  $cmd JOB=1:"$nj" "$data/log/get_durations.JOB.log" \
    data_dir_utt2dur.py --frame-shift="$frame_shift" "$sdata/JOB"
  for n in $(seq "$nj"); do cat "$sdata/$n/utt2dur"; done \
    | LC_ALL=C sort -k1,1 > "$data/utt2dur.tmp"
  mv "$data/utt2dur.tmp" "$data/utt2dur"
fi
echo "$0: computed $data/utt2dur"
