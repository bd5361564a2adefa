#!/usr/bin/env bash
# Kaldi's utils/validate_data_dir.sh (same arguments); the work is done by pybin/data_dir_validate.py.
# Checks that a data dir is sorted (LC_ALL=C), has unique keys and consistent files; on the
# first problem it names the file and line and exits 1.
# Usage: utils/validate_data_dir.sh [--no-feats] [--no-text] [--no-wav] [--no-spk-sort] [--non-print] <data-dir>
#  e.g.: utils/validate_data_dir.sh --no-feats data/train
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/data_dir_validate.py" "$@"
