#!/usr/bin/env bash
# Computes log mel filterbank features for a Kaldi data dir, as Kaldi's steps/make_fbank.sh does:
# <fbank-dir>/raw_fbank_<data>.<n>.ark/.scp, <data-dir>/feats.scp, utt2num_frames, utt2dur,
# per-job logs. Same options as steps/make_mfcc.sh (which does the work, with --feat-type fbank),
# with --fbank-config instead of --mfcc-config.
# Usage: steps/make_fbank.sh [options] <data-dir> [<log-dir> [<fbank-dir>] ]
#  e.g.: steps/make_fbank.sh --nj 4 --fbank-config conf/fbank.conf data/train exp/make_fbank/train fbank

# Begin configuration section.
fbank_config=conf/fbank.conf
# End configuration section (the other options and their defaults: steps/make_mfcc.sh).

args=(--feat-type fbank --mfcc-config "$fbank_config")
while [ $# -gt 0 ]; do
  case "$1" in
    --fbank-config) args+=(--mfcc-config "$2"); shift 2;;
    --fbank-config=*) args+=(--mfcc-config "${1#*=}"); shift;;
    --mfcc-config|--mfcc-config=*|--feat-type|--feat-type=*)
      echo "$0: $1 is not an option of make_fbank.sh (use --fbank-config)" >&2; exit 1;;
    *) args+=("$1"); shift;;
  esac
done
exec "$(dirname "$0")/make_mfcc.sh" "${args[@]}"
