#!/usr/bin/env bash
# Kaldi's utils/data/perturb_data_dir_speed_3way.sh (same arguments and options); the work is
# done by pybin/data_dir_perturb_speed.py. Writes <destdir>: <srcdir> as it is, and at speeds
# 0.9 and 1.1 (ids prefixed sp0.9-, sp1.1-; with --always-include-prefix true the originals
# get sp1.0-), combined; as utils/data/perturb_data_dir_speed.sh for each copy.
# Usage: utils/data/perturb_data_dir_speed_3way.sh [--always-include-prefix true] <srcdir> <destdir>
#  e.g.: utils/data/perturb_data_dir_speed_3way.sh data/train data/train_sp
root=$(cd -P "$(dirname "$(readlink -f "$0")")/../.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
always_include_prefix=false
include_spk_prefix=true
. "$root/utils/parse_options.sh" || exit 1
if [ $# -ne 2 ]; then
  echo "Usage: $0 [--always-include-prefix true|false] <srcdir> <destdir>" >&2
  echo "Applies standard 3-way speed perturbation using factors of 0.9, 1.0 and 1.1." >&2
  echo " e.g.: $0 data/train data/train_sp" >&2
  exit 1
fi
if [ "$include_spk_prefix" != true ]; then
  echo "$0: only --include-spk-prefix true (Kaldi's default: sp<factor>- prefixes) is supported" >&2
  exit 1
fi
exec "$root/pybin/data_dir_perturb_speed.py" --always-include-prefix=$always_include_prefix \
  0.9,1.0,1.1 "$1" "$2"
