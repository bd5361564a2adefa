# The recipe's environment: the toolkit's path.sh (PATH, .venv, KALDI_ROOT's binaries if set).
# HYBRIDASR_ROOT, when set, names the toolkit (for a copy of this recipe elsewhere); else it is
# three levels up, resolved physically (cd -P) so a symlink to this recipe dir works too.
. "${HYBRIDASR_ROOT:-$(cd -P "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd -P)}/path.sh"
