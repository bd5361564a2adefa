#!/usr/bin/env bash
# Kaldi's utils/fix_data_dir.sh (same arguments); the work is done by pybin/data_dir_fix.py.
# Sorts a data dir's files and keeps the utterances/speakers/recordings they all agree on;
# the old files are kept in <data-dir>/.backup/.
# Usage: utils/fix_data_dir.sh [--utt-extra-files 'f1 f2'] [--spk-extra-files 'f1'] <data-dir>
#  e.g.: utils/fix_data_dir.sh data/train
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/data_dir_fix.py" "$@"
