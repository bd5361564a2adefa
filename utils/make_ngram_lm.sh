#!/usr/bin/env bash
# An n-gram LM (ARPA) from training text, for a lang dir without one; the work is done by
# pybin/make_ngram_lm.py (interpolated modified Kneser-Ney by default, as SRILM's
# ngram-count -kndiscount -interpolate). Then utils/format_lm.sh makes G.fst from it.
# Usage: utils/make_ngram_lm.sh [--order=3] [--smoothing=kn|ukn|wb] [--vocab=<words.txt>]
#          [--oov-symbol='<UNK>'] [--has-utt-ids=true|false] <text> <arpa-out>
#  e.g.: utils/make_ngram_lm.sh --vocab=data/lang/words.txt --has-utt-ids=true \
#          data/train/text data/local/lm/lm.arpa.gz
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/make_ngram_lm.py" "$@"
