#!/usr/bin/env bash
# The digits recipe: the any-Kaldi-dir recipe (egs/kaldi_dir/s5/run.sh: its stages, options and
# local/ scripts) on ../shared/data/kaldi_digits beside the hybridasr checkout, written here.
# Every option is that recipe's; --kaldi-dir DIR runs it on another Kaldi dir.
#   e.g.: ./run.sh;  ./run.sh --stage 3 --realign-iters 1 --decode-sets "test train_cv10"
root=${HYBRIDASR_ROOT:-$(cd -P "$(dirname "$(readlink -f "$0")")/../../.." && pwd -P)}
default_kaldi_dir=$root/../shared/data/kaldi_digits
. "$root/egs/kaldi_dir/s5/run.sh"
