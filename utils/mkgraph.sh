#!/usr/bin/env bash
# Kaldi's utils/mkgraph.sh (same arguments and options); the work is done by pybin/mkgraph.py
# (kaldifst and the toolkit's own H transducer, no Kaldi binaries). Unlike Kaldi's, it writes
# nothing into <lang-dir>: LG, CLG and the ilabel info go to <graph-dir>/tmp.
# Usage: utils/mkgraph.sh [options] <lang-dir> <model-dir> <graph-dir>
#  e.g.: utils/mkgraph.sh data/lang_test exp/tri1 exp/tri1/graph
# Options:
#   --transition-scale <float>   # scale of the transition probabilities (default 1.0)
#   --self-loop-scale <float>    # scale of the self-loop probabilities (default 0.1)
#   --remove-oov                 # remove G's paths through the OOV word (lang/oov.int)
#   --mono, --left-biphone, --quinphone: accepted and ignored, as Kaldi's (deprecated there)
set -euo pipefail
root=$(cd -P "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
if [ "${VIRTUAL_ENV:-}" != "$root/.venv" ] || [ "${HYBRIDASR_ROOT:-}" != "$root" ]; then
  export HYBRIDASR_ROOT=$root
  . "$root/path.sh"
fi
opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mono|--left-biphone|--quinphone)
      echo "$0: WARNING: $1 is deprecated and ignored (the tree gives the context)" >&2; shift ;;
    --remove-oov) opts+=("--remove-oov=true"); shift ;;
    --transition-scale|--self-loop-scale)
      [ $# -ge 2 ] || { echo "$0: $1 needs a value" >&2; exit 1; }
      opts+=("$1=$2"); shift 2 ;;
    --*=*) opts+=("$1"); shift ;;
    *) break ;;
  esac
done
if [ $# -ne 3 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 1
fi
exec "$root/pybin/mkgraph.py" "${opts[@]}" "$@"
