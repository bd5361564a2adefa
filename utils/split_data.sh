#!/usr/bin/env bash
# Kaldi's utils/split_data.sh (same arguments); the work is done by pybin/data_dir_split.py.
# Splits a data dir per speaker into <data-dir>/split<N>/<n>/ (per utterance into
# split<N>utt/ with --per-utt); does nothing when the split is newer than the data.
# Usage: utils/split_data.sh [--per-utt] <data-dir> <num-to-split>
#  e.g.: utils/split_data.sh data/train 4   # -> data/train/split4/{1,2,3,4}
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/data_dir_split.py" "$@"
