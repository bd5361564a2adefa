# Sourced by recipes and steps: puts the toolkit on PATH and activates its environment.
# Kaldi's binaries are added when KALDI_ROOT is set (optional: nothing requires Kaldi).
# HYBRIDASR_ROOT: this file's directory, resolved physically (cd -P), so that sourcing it as
# steps/../path.sh through a recipe's steps -> ../../../steps symlink, or from a symlinked
# recipe dir, still names the toolkit. Safe under set -euo pipefail.
if [ -z "${HYBRIDASR_ROOT:-}" ]; then
  HYBRIDASR_ROOT=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
fi
export HYBRIDASR_ROOT
if [ -f "$HYBRIDASR_ROOT/.venv/bin/activate" ] && [ "${VIRTUAL_ENV:-}" != "$HYBRIDASR_ROOT/.venv" ]; then
  # shellcheck disable=SC1091
  . "$HYBRIDASR_ROOT/.venv/bin/activate"
fi
export PATH=$HYBRIDASR_ROOT/pybin:$HYBRIDASR_ROOT/utils:$HYBRIDASR_ROOT/utils/data:$PATH
export PYTHONPATH=$HYBRIDASR_ROOT${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export LC_ALL=C
if [ -n "${KALDI_ROOT:-}" ] && [ -d "$KALDI_ROOT/src" ]; then
  for d in bin featbin gmmbin nnetbin nnet2bin nnet3bin latbin fstbin lmbin online2bin; do
    if [ -d "$KALDI_ROOT/src/$d" ]; then PATH=$PATH:$KALDI_ROOT/src/$d; fi
  done
  if [ -d "$KALDI_ROOT/tools/openfst/bin" ]; then PATH=$PATH:$KALDI_ROOT/tools/openfst/bin; fi
  export PATH
fi
