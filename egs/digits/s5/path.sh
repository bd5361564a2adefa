# The recipe's environment: the toolkit's path.sh (PATH, .venv, KALDI_ROOT's binaries if set).
# HYBRIDASR_ROOT, when set, names the toolkit (for a copy of this recipe elsewhere).
. "${HYBRIDASR_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd -P)}/path.sh"
