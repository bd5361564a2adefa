#!/usr/bin/env bash
# Kaldi's utils/subset_data_dir.sh (same arguments); the work is done by pybin/data_dir_subset.py.
# Makes a data dir holding some of the utterances of another (without a flag: <num-utt>
# utterances spread evenly over the data).
# Usage: utils/subset_data_dir.sh [--speakers|--shortest|--first|--last|--per-spk] <srcdir> <num-utt> <destdir>
#        utils/subset_data_dir.sh --spk-list <speaker-list-file> <srcdir> <destdir>
#        utils/subset_data_dir.sh --utt-list <utterance-list-file> <srcdir> <destdir>
#  e.g.: utils/subset_data_dir.sh --first data/train 100 data/train_100
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/data_dir_subset.py" "$@"
