#!/usr/bin/env bash
# Kaldi's utils/lang/check_phones_compatible.sh (same arguments); the work is done by
# pybin/check_phones_compatible.py (hybridasr.kaldi.symbol_table.check_phones_compatible):
# exit 0 when two phone symbol tables give every phone the same id, their disambiguation
# symbols aside; one of them missing passes, as in Kaldi.
# e.g.: utils/lang/check_phones_compatible.sh data/lang/phones.txt exp/tri3b_ali/phones.txt
root=$(cd -P "$(dirname "$(readlink -f "$0")")/../.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/check_phones_compatible.py" "$@"
