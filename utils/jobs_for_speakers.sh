#!/usr/bin/env bash
# Copyright hybridasr contributors. Apache 2.0.
# The number of jobs <data-dir> can be split into by speaker (utils/split_data.sh, which
# refuses more parts than speakers): <nj>, or the number of speakers where there are fewer,
# said on stderr in <caller>'s name. A one-speaker dir (a tutorial's, Kaldi's yesno) then runs
# as one job instead of failing; Kaldi's own step scripts leave that to the recipe.
# Usage: utils/jobs_for_speakers.sh <caller> <data-dir> <nj>
#  e.g.: nj=$(utils/jobs_for_speakers.sh "$0" data/train $nj)
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "Usage: $0 <caller> <data-dir> <nj>" >&2; exit 1
fi
caller=$1 data=$2 nj=$3
case "$nj" in ''|*[!0-9]*|0) echo "$caller: --nj must be a positive integer, got '$nj'" >&2; exit 1 ;; esac
if [ ! -s "$data/spk2utt" ]; then
  echo "$caller: $data/spk2utt is missing or empty (utils/utt2spk_to_spk2utt.pl makes it)" >&2
  exit 1
fi
ns=$(wc -l < "$data/spk2utt")
if [ "$nj" -gt "$ns" ]; then
  echo "$caller: $data has only $ns speaker(s): using --nj $ns instead of $nj" >&2
  nj=$ns
fi
echo "$nj"
