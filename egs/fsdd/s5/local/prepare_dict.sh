#!/usr/bin/env bash
# Writes the dict dir of the ten digits: an ARPAbet lexicon (CMU-dict pronunciations, lower
# case, one each) with "!SIL SIL" and "<UNK> SPN", silence_phones.txt (SIL SPN),
# optional_silence.txt (SIL), nonsilence_phones.txt (the 19 phones the lexicon uses, one a
# line: no phone shares a tree root with another) and an empty extra_questions.txt.
# Usage: local/prepare_dict.sh <dict-dir>
#  e.g.: local/prepare_dict.sh data/local/dict
set -euo pipefail
if [ $# -ne 1 ]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 1
fi
dir=$1
export LC_ALL=C
mkdir -p "$dir"
cat > "$dir/lexicon.txt.tmp" <<LEX
!SIL SIL
<UNK> SPN
eight ey t
five f ay v
four f ao r
nine n ay n
one w ah n
seven s eh v ah n
six s ih k s
three th r iy
two t uw
zero z ih r ow
LEX
sort -u "$dir/lexicon.txt.tmp" > "$dir/lexicon.txt"
rm -f "$dir/lexicon.txt.tmp" "$dir/lexiconp.txt"
printf 'SIL\nSPN\n' > "$dir/silence_phones.txt"
echo SIL > "$dir/optional_silence.txt"
awk '{for (i = 2; i <= NF; i++) print $i}' "$dir/lexicon.txt" | grep -vxE 'SIL|SPN' | sort -u \
  > "$dir/nonsilence_phones.txt"
: > "$dir/extra_questions.txt"
echo "$0: $dir: $(grep -c . "$dir/lexicon.txt") lexicon entries," \
  "$(wc -l < "$dir/nonsilence_phones.txt") nonsilence phones"
