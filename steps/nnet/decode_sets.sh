#!/usr/bin/env bash
# Decodes and scores each of several data sets with one network (steps/nnet/decode.sh): data/<set>
# into <exp-dir>/decode_<set> for each <set> of <sets>, unless it is already scored after the
# network was made (<exp-dir>/final.nnet) with the same --ref-normalize; one scored otherwise is
# only scored again. Each set is split by speaker, as Kaldi's decoding is: at most one job per
# speaker (said when --nj is more).

# Begin configuration section.
nj=2
cmd=run.pl
device=cpu
ref_normalize=false  # steps/score.sh's --ref-normalize
decode_opts=         # more steps/nnet/decode.sh options, e.g. "--acwt 0.08 --beam 15"
scoring_opts=        # its --scoring-opts (empty: steps/score.sh's defaults)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v forward.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1
. "$(dirname "$0")/../../utils/recipe_lib.sh"

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <graph-dir> <exp-dir> "<set> ..."
 ... where <exp-dir> holds the network (final.nnet, final.mdl, ali_train_pdf.counts) and each
 <set> names data/<set>, decoded into <exp-dir>/decode_<set>.
 e.g.: $0 --nj 4 exp/mono/graph exp/blstm "test train_cv10"
Options:
  --nj <nj>                    # parallel jobs, at most one per speaker (default: $nj)
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --device cpu|cuda|auto       # where the network runs (default: $device)
  --ref-normalize true|false   # steps/score.sh's (default: $ref_normalize)
  --decode-opts "<opts>"       # more steps/nnet/decode.sh options
  --scoring-opts "<opts>"      # steps/score.sh options, e.g. "--min-lmwt 1 --max-lmwt 5"
USAGE
  exit 1
fi

graph=$1
dir=$2
sets=$3

for x in $sets; do
  if [ ! -s data/$x/feats.scp ]; then
    echo "$0: data/$x has no feats.scp: no set to decode" >&2
    exit 1
  fi
done
for x in $sets; do
  newest_wer=$(ls -t $dir/decode_$x/wer_* 2>/dev/null | head -n 1 || true)
  only_score=
  if [ -n "$newest_wer" ] && [ "$newest_wer" -nt $dir/final.nnet ]; then
    if [ "$(scored_normalized $dir/decode_$x)" == $ref_normalize ]; then
      echo "$dir/decode_$x is already scored: skipping"
      continue
    fi
    echo "$dir/decode_$x: scoring again with --ref-normalize $ref_normalize"
    only_score="--stage 1"
  fi
  # (decode.sh takes at most one job a speaker, and says so)
  # shellcheck disable=SC2086
  "$(dirname "$0")"/decode.sh --nj $nj --cmd "$cmd" --device $device $only_score \
    --ref-normalize $ref_normalize $decode_opts ${scoring_opts:+--scoring-opts "$scoring_opts"} \
    "$graph" data/$x $dir/decode_$x
done
