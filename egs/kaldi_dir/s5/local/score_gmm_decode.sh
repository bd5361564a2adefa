#!/usr/bin/env bash
# The GMM's own lattices (<gmm-decode-dir>/lat.*.gz) scored as the networks' are with
# --ref-normalize true (run.sh's stage 5), into <out-dir>, over the LM weights and insertion
# penalties Kaldi scored (the same file names as its wer_* files), else steps/score.sh's;
# skipped when <out-dir> is so scored already. Without lattices a warning says that the GMM's
# WER beside the networks' is Kaldi's own.

echo "$0 $@"
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 4 ]; then
  cat >&2 <<USAGE
Usage: $0 <gmm-decode-dir> <graph-dir> <data-dir> <out-dir>
 e.g.: $0 ../kaldi/exp/mono/decode ../kaldi/exp/mono/graph data/test exp/gmm_decode_test
USAGE
  exit 1
fi
src=$1
graph=$2
data=$3
g=$4

if ! ls "$src"/lat.*.gz >/dev/null 2>&1; then
  echo "$0: warning: $src has no lattices: the GMM's WER beside the network's is Kaldi's, against the reference as given" >&2
  exit 0
fi
if ls $g/wer_* >/dev/null 2>&1 && [ "$(scored_normalized $g)" == true ]; then
  echo "$g is already scored: skipping"
  exit 0
fi
# Kaldi's range where its files show it: wer_LMWT (local/score.sh, no penalty) or wer_LMWT_WIP
# (score_kaldi.sh, its penalties too); else score.sh's own
lmwts=$(ls "$src" | sed -nE 's:^wer_([0-9]+)(_[0-9.]+)?$:\1:p' | sort -nu)
wips=$(ls "$src" | sed -nE 's:^wer_[0-9]+_([0-9.]+)$:\1:p' | sort -nu | paste -sd, -)
range=()
[ -n "$lmwts" ] && range=(--min-lmwt $(echo "$lmwts" | head -n 1) --max-lmwt $(echo "$lmwts" | tail -n 1) \
  --word-ins-penalty "${wips:-0.0}")
mkdir -p $g
for f in "$src"/lat.*.gz; do ln -sfn "$(readlink -f "$f")" $g/; done
steps/score.sh --ref-normalize true ${range[@]+"${range[@]}"} $data "$graph" $g
