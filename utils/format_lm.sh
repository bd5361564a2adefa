#!/usr/bin/env bash
# Kaldi's utils/format_lm.sh (same arguments); the work is done by pybin/format_lm.py.
# Copies <lang-dir> (phones.txt words.txt topo L.fst L_disambig.fst phones/ oov.int oov.txt,
# not its G.fst) to <out-lang-dir> and writes G.fst there from the ARPA LM (plain or .gz), as
# arpa2fst --disambig-symbol=#0 --read-symbol-table=words.txt; the lexicon serves the check
# that G has no cycle of words without a pronunciation.
# Usage: utils/format_lm.sh <lang-dir> <arpa-LM> <lexicon> <out-lang-dir>
#  e.g.: utils/format_lm.sh data/lang data/local/lm/lm.arpa.gz data/local/dict/lexicon.txt \
#          data/lang_test
if [ $# -ne 4 ]; then
  echo "Usage: $0 <lang-dir> <arpa-LM> <lexicon> <out-lang-dir>" >&2
  echo "e.g.: $0 data/lang data/local/lm/lm.arpa.gz data/local/dict/lexicon.txt data/lang_test" >&2
  echo "Convert ARPA-format language models to FSTs." >&2
  exit 1
fi
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/format_lm.py" "$@"
