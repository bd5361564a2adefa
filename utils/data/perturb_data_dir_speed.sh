#!/usr/bin/env bash
# Kaldi's utils/data/perturb_data_dir_speed.sh (same arguments); the work is done by
# pybin/data_dir_perturb_speed.py. Writes <destdir>: <srcdir> at speed <factor>, utterance and
# speaker ids prefixed sp<factor>-, wav.scp entries piped through sox's 'speed <factor>' (when
# sox is on PATH) or wav_speed_perturb.py, segments/utt2dur/reco2dur divided by <factor>;
# utt2dur and reco2dur are made in <srcdir> first when missing. Validated at the end.
# Usage: utils/data/perturb_data_dir_speed.sh <factor> <srcdir> <destdir>
#  e.g.: utils/data/perturb_data_dir_speed.sh 0.9 data/train data/train_sp0.9
root=$(cd -P "$(dirname "$(readlink -f "$0")")/../.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
include_spk_prefix=true
. "$root/utils/parse_options.sh" || exit 1
if [ $# -ne 3 ]; then
  echo "Usage: $0 <factor> <srcdir> <destdir>" >&2
  echo " e.g.: $0 0.9 data/train data/train_sp0.9" >&2
  exit 1
fi
if [ "$include_spk_prefix" != true ]; then
  echo "$0: only --include-spk-prefix true (Kaldi's default: sp<factor>- prefixes) is supported" >&2
  exit 1
fi
exec "$root/pybin/data_dir_perturb_speed.py" "$@"
