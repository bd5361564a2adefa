# What every recipe's run.sh shares (issue 32), sourced from the recipe dir after
# utils/parse_options.sh:  . utils/recipe_lib.sh
#
#   recipe_lock <cmdline>          one run at a time in the recipe dir (flock on .run.lock)
#   check_stage_options <last>     --stage, --stop-stage (0..<last>) and --nj, before any stage
#   check_recipe_inputs <inputs> <restart> <dir>...
#                                  data/recipe_inputs.txt: a run with other inputs than the one
#                                  that made <dir>s is refused naming --restart true, which
#                                  removes them first
#   stage_begin <record> [--note=name=value]... [name=value | input]...
#                                  sets $stage_status: done | new | partial | changed
#                                  (pybin/stage_record.py; hybridasr/recipe/stage_record.py)
#   stage_finish <record>          the stage's last write: its record marked complete
# Each exits the recipe (status 1, a message naming the option or file) on what it refuses.

recipe_lock() {
  # the kernel releases the lock when the run ends, however it ends (kill -9 included)
  # (a few seconds' wait: the processes of a run just killed may still be ending)
  exec 9>> .run.lock
  if ! flock -w 3 9; then
    echo "$0: another run is using $(pwd): $(cat .run.lock.who 2>/dev/null || echo '(unknown)');" \
      "wait for it to end or stop it" >&2
    exit 1
  fi
  echo "pid $$: $1" > .run.lock.who
}

check_stage_options() {
  local last=$1 v
  # a bad one would otherwise do nothing and exit 0, or fail deep inside a step
  for v in stage stop_stage nj; do
    case "${!v}" in ''|*[!0-9]*) echo "$0: --${v//_/-} must be a whole number, not '${!v}'" >&2; exit 1 ;; esac
  done
  if [ "$stage" -gt "$last" ] || [ "$stop_stage" -gt "$last" ]; then
    echo "$0: the stages are 0..$last: --stage $stage --stop-stage $stop_stage runs none" >&2; exit 1
  fi
  if [ "$stage" -gt "$stop_stage" ]; then
    echo "$0: --stage $stage is after --stop-stage $stop_stage: nothing to run" >&2; exit 1
  fi
  [ "$nj" -ge 1 ] || { echo "$0: --nj is a number of jobs, at least 1 (not $nj)" >&2; exit 1; }
}

check_recipe_inputs() {
  # a later run with other inputs would mix its stages with the old outputs
  local inputs=$1 restart=$2; shift 2
  if [ "$restart" == true ]; then
    echo "$0: --restart true: removing $* of the earlier run"
    rm -rf "$@"
  elif [ -f data/recipe_inputs.txt ] && [ "$(cat data/recipe_inputs.txt)" != "$inputs" ]; then
    echo "$0: $* were made by a run with other options or inputs:" >&2
    diff <(tr ' ' '\n' < data/recipe_inputs.txt) <(echo "$inputs" | tr ' ' '\n') \
      | sed -n 's|^< |  before: |p; s|^> |  now:    |p' >&2 || true
    echo "$0: run with --restart true to start over in this dir (it removes $*)," \
      "or use another recipe dir" >&2
    exit 1
  fi
  mkdir -p data
  [ -f data/recipe_inputs.txt ] || echo "$inputs" > data/recipe_inputs.txt
}

stage_begin() {
  local record=$1 log a notes=() items=(); shift
  for a in "$@"; do
    case "$a" in --note=*) notes+=("$a") ;; *) items+=("$a") ;; esac
  done
  log=$(mktemp)
  if ! stage_status=$(stage_record.py ${notes[@]+"${notes[@]}"} begin "$record" \
      ${items[@]+"${items[@]}"} 2> "$log"); then
    cat "$log" >&2; rm -f "$log"; exit 1
  fi
  sed -n 's|^.* INFO stage_record.py: ||p' "$log"; rm -f "$log"
}

stage_finish() {
  local log; log=$(mktemp)
  stage_record.py finish "$1" 2> "$log" || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
}
