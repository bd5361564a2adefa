#!/usr/bin/env bash
# Kaldi's utils/subset_data_dir_tr_cv.sh (same arguments); the work is done by pybin/data_dir_tr_cv.py.
# Kaldi nnet1's training / cross-validation split: 10% of the speakers (random, seeded) are
# held out in <cv-data>; when that leaves a side empty (fewer than 10 speakers), the same
# percentage of utterances instead (said in the log), chosen so their words stay in training.
# Usage: utils/subset_data_dir_tr_cv.sh [--cv-spk-percent 10] [--cv-utt-percent P] [--seed 777] <src-data> <train-data> <cv-data>
#  e.g.: utils/subset_data_dir_tr_cv.sh data/train data/train_tr90 data/train_cv10
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
exec "$root/pybin/data_dir_tr_cv.py" "$@"
