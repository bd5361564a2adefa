#!/usr/bin/env bash
# Kaldi's utils/copy_data_dir.sh (same arguments); the work is done by pybin/data_dir_copy.py.
# Copies a data dir, optionally renaming utterances and speakers, and validates the copy.
# Usage: utils/copy_data_dir.sh [--utt-prefix p] [--utt-suffix s] [--spk-prefix p] [--spk-suffix s] <srcdir> <destdir>
#  e.g.: utils/copy_data_dir.sh --utt-prefix sp0.9- --spk-prefix sp0.9- data/train data/train_sp0.9
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/data_dir_copy.py" "$@"
