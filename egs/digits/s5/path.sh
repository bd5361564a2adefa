# The recipe's environment: the toolkit's path.sh (PATH, .venv, KALDI_ROOT's binaries if set).
# HYBRIDASR_ROOT, when set, names the toolkit; else it is three levels up, resolved physically
# (cd -P) so a symlink to this recipe dir works too; else, for a copy of this recipe elsewhere,
# the toolkit that this dir's steps/ link points into.
_recipe_dir=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
if [ -z "${HYBRIDASR_ROOT:-}" ]; then
  for _root in "$(cd -P "$_recipe_dir/../../.." && pwd -P)" \
               "$( (cd -P "$_recipe_dir/steps/.." 2>/dev/null && pwd -P) || true)"; do
    if [ -n "$_root" ] && [ -f "$_root/path.sh" ] && [ -d "$_root/pybin" ]; then
      HYBRIDASR_ROOT=$_root; break
    fi
  done
fi
if [ -z "${HYBRIDASR_ROOT:-}" ] || [ ! -f "$HYBRIDASR_ROOT/path.sh" ]; then
  echo "$_recipe_dir/path.sh: cannot find the hybridasr toolkit (${HYBRIDASR_ROOT:-not three levels up, and steps/ does not link into it}): set HYBRIDASR_ROOT=/path/to/hybridasr" >&2
  unset _recipe_dir _root
  return 1 2>/dev/null || exit 1
fi
unset _recipe_dir _root
. "$HYBRIDASR_ROOT/path.sh"
