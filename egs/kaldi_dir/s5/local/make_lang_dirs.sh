#!/usr/bin/env bash
# The lang dirs run.sh makes in stage 0: <lang-dir> from the dict dir <dict-dir> (lexicon*.txt,
# *_phones.txt; utils/prepare_lang.sh) unless <lang-dir> is <dict-dir> itself (a lang dir
# already), and <lang-test> with the G.fst of --lm-arpa, or of an n-gram LM estimated from
# --lm-text (utils/make_ngram_lm.sh, utils/format_lm.sh), unless it is <lang-dir>. Each is
# skipped when made after its input.

# Begin configuration section.
oov_word=            # the lexicon's OOV entry (default: the first of <UNK> <unk>
                     # <SPOKEN_NOISE> <spoken_noise> in it)
lm_arpa=             # an ARPA LM
lm_text=             # or text to estimate one from (one sentence a line)
lm_order=3           # order of the LM estimated from --lm-text
position_dependent_phones=true  # utils/prepare_lang.sh's (false: the GMM's phones have no
                     # word positions, as Kaldi's yesno recipe makes its lang dir)
# End configuration section.

echo "$0 $@"
. ./path.sh
. utils/parse_options.sh
set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <dict-dir> <lang-dir> <lang-test>
 e.g.: $0 --lm-text /data/lm_text.txt ../kaldi/data/local/dict data/lang data/lang_test
Options: --oov-word WORD, --lm-arpa FILE, --lm-text FILE, --lm-order N ($lm_order),
  --position-dependent-phones true|false ($position_dependent_phones)
USAGE
  exit 1
fi
dict=$1
lang_dir=$2
lang_test=$3
lexicon=/dev/null

if [ "$lang_dir" != "$dict" ]; then
  if [ -s $lang_dir/L.fst ] && [ $lang_dir/L.fst -nt "$dict" ]; then
    echo "$lang_dir is already made from $dict: skipping"
  else
    if [ -z "$oov_word" ]; then
      for w in '<UNK>' '<unk>' '<SPOKEN_NOISE>' '<spoken_noise>'; do
        # (grep on the files: "cat | grep -q" fails under pipefail once grep stops early)
        if grep -qs "^$w[[:space:]]" "$dict"/lexicon*.txt; then oov_word=$w; break; fi
      done
      [ -z "$oov_word" ] && { echo "$0: the lexicon of $dict has none of <UNK> <unk>" \
        "<SPOKEN_NOISE> <spoken_noise>: give its OOV entry with --oov-word" >&2; exit 1; }
    fi
    utils/prepare_lang.sh --position-dependent-phones "$position_dependent_phones" \
      "$dict" "$oov_word" data/local/lang_tmp $lang_dir
  fi
fi
[ -f "$dict/lexicon.txt" ] && lexicon=$dict/lexicon.txt
if [ "$lang_test" != "$lang_dir" ]; then
  if [ -s $lang_test/G.fst ] && [ $lang_test/G.fst -nt "$lang_dir/L.fst" ]; then
    echo "$lang_test already has G.fst: skipping"
    exit 0
  fi
  arpa=$lm_arpa
  if [ -z "$arpa" ]; then
    arpa=data/local/lm/lm.arpa.gz
    mkdir -p data/local/lm
    utils/make_ngram_lm.sh --order=$lm_order --vocab="$lang_dir/words.txt" \
      --oov-symbol="$(cat "$lang_dir/oov.txt")" "$lm_text" $arpa
  fi
  utils/format_lm.sh "$lang_dir" "$arpa" "$lexicon" $lang_test
fi
