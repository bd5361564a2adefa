#!/usr/bin/env bash
# Prints the line with the lowest error rate among the lines on stdin, like Kaldi's
# utils/best_wer.sh: compute-wer lines ("%WER 3.33 [ 2 / 60, 0 ins, 1 del, 1 sub ]", usually
# prefixed by "file:" from grep) and sclite "Sum/Avg" lines. Ties keep the first line.
# e.g.: grep WER exp/mono/decode/wer_* | utils/best_wer.sh
if [ $# -ne 0 ]; then
  echo "Usage: $0 < wer-lines" >&2
  echo "e.g.: grep WER exp/mono/decode/wer_* | $0" >&2
  exit 1
fi
exec awk '
  function better(x) { return x ~ /^[0-9.]+$/ && (!found || x + 0 < best + 0) }
  {
    v = ""
    if (match($0, /[WS]ER [^ \t]+/)) {
      v = substr($0, RSTART + 4, RLENGTH - 4)
    } else if (match($0, / +\| +[^ ]+ +[^ ]+ +\| +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +\|/)) {
      split(substr($0, RSTART, RLENGTH), f, /\|/); split(f[3], g, " "); v = g[5]
    }
    if (v != "" && better(v)) { best = v; line = $0; found = 1 }
  }
  END { if (found) print line }'
