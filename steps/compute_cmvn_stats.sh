#!/usr/bin/env bash
# Computes per-speaker CMVN stats for a Kaldi data dir, as Kaldi's steps/compute_cmvn_stats.sh:
# <cmvn-dir>/cmvn_<data>.ark/.scp (Kaldi's 2 x (dim+1) double matrices) and <data-dir>/cmvn.scp.

# Begin configuration section.
fake=false      # true: fake stats (mean 0, variance 1), i.e. no normalization
fake_dims=      # colon-separated dims that get fake stats (e.g. pitch dims), e.g. 13:14
per_utt=false   # true: stats per utterance (keyed by utterance), not per speaker
two_channel=false
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v compute_cmvn_stats.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> [<log-dir> [<cmvn-dir>] ]
 e.g.: $0 data/train exp/make_mfcc/train mfcc
Note: <log-dir> defaults to <data-dir>/log, and <cmvn-dir> defaults to <data-dir>/data.
Options:
  --fake <true|false>      # write fake stats (no normalization) (default: $fake)
  --fake-dims <d1:d2..>    # dims that get fake stats (default: none)
  --per-utt <true|false>   # stats per utterance instead of per speaker (default: $per_utt)
USAGE
  exit 1
fi

if [ "$two_channel" = true ]; then
  echo "$0: --two-channel is not supported" >&2
  exit 1
fi

data=$1
logdir=${2:-$data/log}
cmvndir=${3:-$data/data}
name=$(basename "$data")

required=("$data/feats.scp")
[ "$per_utt" = true ] || required+=("$data/spk2utt")
for f in "${required[@]}"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done

mkdir -p "$cmvndir" "$logdir"

opts=(--fake="$fake")
[ -n "$fake_dims" ] && opts+=(--fake-dims="$fake_dims")
[ "$per_utt" = true ] || opts+=(--spk2utt=ark:"$data/spk2utt")

compute_cmvn_stats.py "${opts[@]}" scp:"$data/feats.scp" \
    ark,scp:"$cmvndir/cmvn_$name.ark","$cmvndir/cmvn_$name.scp" 2> "$logdir/cmvn_$name.log" \
  || { echo "$0: error computing CMVN stats; see $logdir/cmvn_$name.log" >&2; exit 1; }

cp "$cmvndir/cmvn_$name.scp" "$data/cmvn.scp.tmp"
mv "$data/cmvn.scp.tmp" "$data/cmvn.scp"

nc=$(wc -l < "$data/cmvn.scp")
if [ "$per_utt" = true ]; then nu=$(wc -l < "$data/feats.scp"); else nu=$(wc -l < "$data/spk2utt"); fi
if [ "$nc" -ne "$nu" ]; then
  echo "$0: warning: it seems not all of the speakers got CMVN stats ($nc != $nu);" \
       "consider using utils/fix_data_dir.sh $data" >&2
  [ "$nc" -eq 0 ] && exit 1
fi

echo "$0: Succeeded creating CMVN stats for $name"
