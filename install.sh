#!/usr/bin/env bash
# Creates the toolkit's virtualenv .venv/ at the repo root and installs hybridasr into it.
# Safe to run again: it only reinstalls when pyproject.toml changed.
# e.g.: ./install.sh            (then: cd egs/digits/s5 && ./run.sh)
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "$0: creating .venv with $($python --version 2>&1)"
  $python -m venv .venv
fi
stamp=.venv/.hybridasr-installed
want=$(cat pyproject.toml | sha1sum | cut -d' ' -f1)
if [ -f $stamp ] && [ "$(cat $stamp)" == "$want" ] && .venv/bin/python -c 'import hybridasr, torch, torchaudio, kaldiio' 2>/dev/null; then
  echo "$0: .venv is up to date"
else
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[test]"
  echo "$want" > $stamp
  echo "$0: installed hybridasr into .venv"
fi
.venv/bin/python -c 'import torch, torchaudio; print("torch", torch.__version__, "torchaudio", torchaudio.__version__)'
# kaldifst 1.7.17 beside the venv (not on its path; the toolkit uses kaldifst 1.8): the one whose
# FSTs kaldi-hmm-gmm 1.1.4 takes, for the comparison with Kaldi's own decoder
# (bench/decode.py --against-kaldi and its test in tests/test_decode_gmm.py)
kaldifst17=.venv/kaldifst-1.7.17
if [ ! -d $kaldifst17/kaldifst ]; then
  .venv/bin/python -m pip install --quiet --no-deps --target $kaldifst17 kaldifst==1.7.17
  echo "$0: installed kaldifst 1.7.17 into $kaldifst17"
fi
# the toolkit's C++ (lattice generation), built with the system's g++ (about 2 s); without
# one, decoding writes the 1-best path and scoring re-decodes it per LM weight
.venv/bin/python -c 'from hybridasr.decode import native; print("C++ library", native.build())' ||
  echo "$0: warning: could not build hybridasr's C++ library (no g++?): decoding falls back to 1-best (no lattices)" >&2
