#!/usr/bin/env bash
# Kaldi's utils/prepare_lang.sh (same arguments and options); the work is done by
# pybin/prepare_lang.py (see its --help). Makes a lang dir from a dict dir, which it only reads.
# Usage: utils/prepare_lang.sh [options] <dict-src-dir> <oov-dict-entry> <tmp-dir> <lang-dir>
#  e.g.: utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang data/lang
# Options (Kaldi's, with its defaults): --position-dependent-phones true, --sil-prob 0.5,
#   --num-sil-states 5, --num-nonsil-states 3, --share-silence-phones false,
#   --phone-symbol-table <phones.txt>, --num-extra-phone-disambig-syms 1.
# Options are taken as `--name value` (Kaldi's form) or `--name=value`; the first argument not
# starting with -- ends them.
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    --help|-h|--*=*) args+=("$1"); shift ;;
    --*)
      if [ $# -lt 2 ]; then echo "$0: option $1 needs a value" >&2; exit 1; fi
      args+=("$1=$2"); shift 2 ;;
    *) break ;;
  esac
done
exec "$root/pybin/prepare_lang.py" "${args[@]}" -- "$@"
