#!/usr/bin/env bash
# Kaldi's utils/lang/check_phones_compatible.sh: exit 0 when two phone symbol tables give every
# phone the same id, their disambiguation symbols (#0, #1, ...) aside (a lang dir made from a
# larger lexicon has more of them and the same phones); otherwise a message naming both and
# exit 1. One of the two missing (a model dir written without phones.txt) passes, as in Kaldi;
# both missing is an error.
# e.g.: utils/lang/check_phones_compatible.sh data/lang/phones.txt exp/tri3b_ali/phones.txt

if [ $# -ne 2 ]; then
  echo "Usage: $0 <phones-symbol-table-1> <phones-symbol-table-2>" >&2
  echo " e.g.: $0 data/lang/phones.txt exp/tri3b_ali/phones.txt" >&2
  exit 1
fi
first=$1
second=$2
if [ ! -f "$first" ] && [ ! -f "$second" ]; then
  echo "$0: neither $first nor $second exists" >&2
  exit 1
fi
[ -f "$first" ] && [ -f "$second" ] || exit 0
if ! cmp -s <(grep -v '^#' "$first") <(grep -v '^#' "$second"); then
  echo "$0: the phone symbol tables $first and $second are not compatible (the phones or" \
    "their ids differ)" >&2
  exit 1
fi
exit 0
