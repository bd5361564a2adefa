#!/usr/bin/env bash
# The part of a speed-perturbed data dir that belongs to a split of the original: every
# utterance of <sp-data> whose original (its id without the sp<f>- prefix) is in <split-data>,
# so that the perturbed copies of a cv utterance stay in cv and none of them is trained on.
# Usage: local/perturbed_split.sh <split-data> <sp-data> <dest-data>
#  e.g.: local/perturbed_split.sh data/train_cv10 data/train_sp data/train_sp_cv10
set -euo pipefail
if [ $# -ne 3 ]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 1
fi
split=$1
sp=$2
dest=$3
export LC_ALL=C
for f in "$split/utt2spk" "$sp/utt2spk"; do
  [ -f "$f" ] || { echo "$0: missing file $f" >&2; exit 1; }
done
mkdir -p "$dest"
awk 'NR == FNR { keep[$1] = 1; next }
     { u = $1; sub(/^sp[0-9.]+-/, "", u); if (u in keep) print $1 }' \
  "$split/utt2spk" "$sp/utt2spk" > "$dest/.utt_list"
utils/subset_data_dir.sh --utt-list "$dest/.utt_list" "$sp" "$dest"
rm -f "$dest/.utt_list"
echo "$0: $dest: $(wc -l < "$dest/utt2spk") utterances of $sp (the originals in $split)"
