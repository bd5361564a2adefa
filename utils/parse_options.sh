# utils/parse_options.sh: Kaldi's option parsing for bash scripts (source it, don't run it).
#
# A script declares its options as shell variables with defaults, then sources this file:
#   nj=4; cmd=run.pl; use_gpu=false
#   . utils/parse_options.sh
# and then `--nj 8`, `--use-gpu true` or `--use-gpu=true` set them ('-' in a name becomes '_').
# Rules (as in Kaldi):
#  - an option must name a variable the script already defined, else "invalid option";
#  - a variable whose current value is true or false only takes "true" or "false";
#  - `--config <file>` files (bash assignments, e.g. `nj=8`) are sourced first, in order, so the
#    command line wins over them;
#  - `--help` / `-h` prints $help_message (if set) to stderr and exits 0;
#  - parsing stops at the first argument that does not start with "--" (or after "--");
#  - the remaining arguments stay in "$@".
# Unlike Kaldi, `--name=value` is accepted as well as `--name value`.

# Config files first (lower priority than the command line).
__po_argv=("$@")
__po_i=0
while [ $__po_i -lt ${#__po_argv[@]} ]; do
  __po_a=${__po_argv[$__po_i]}
  case $__po_a in
    --config=*) __po_conf=${__po_a#--config=}; __po_i=$((__po_i + 1)) ;;
    --config)
      if [ $((__po_i + 1)) -ge ${#__po_argv[@]} ]; then
        echo "$0: option --config needs a value" >&2; exit 1
      fi
      __po_conf=${__po_argv[$((__po_i + 1))]}; __po_i=$((__po_i + 2)) ;;
    --help|-h|--) break ;;
    --*=*) __po_i=$((__po_i + 1)); continue ;;
    --*) __po_i=$((__po_i + 2)); continue ;;
    *) break ;;
  esac
  if [ ! -r "$__po_conf" ]; then
    echo "$0: missing config '$__po_conf'" >&2; exit 1
  fi
  # shellcheck disable=SC1090
  . "$__po_conf" || { echo "$0: error reading config '$__po_conf'" >&2; exit 1; }
  config=$__po_conf
done
unset __po_argv __po_i __po_a __po_conf

while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h)
      if [ -z "${help_message:-}" ]; then echo "No help found." >&2
      else printf '%b\n' "$help_message" >&2; fi
      exit 0 ;;
    --) shift; break ;;
    --*=*) __po_name=${1%%=*}; __po_value=${1#*=}; __po_opt=$__po_name; shift ;;
    --*)
      __po_name=$1; __po_opt=$1
      if [ $# -lt 2 ]; then
        echo "$0: option $1 needs a value" >&2; exit 1
      fi
      __po_value=$2; shift 2 ;;
    *) break ;;
  esac
  __po_name=${__po_name#--}
  __po_name=${__po_name//-/_}
  if [[ ! $__po_name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || [[ ! -v $__po_name ]]; then
    echo "$0: invalid option $__po_opt" >&2; exit 1
  fi
  if [ "$__po_name" = config ]; then continue; fi  # already sourced above
  __po_old=${!__po_name}
  if [ "$__po_old" = true ] || [ "$__po_old" = false ]; then
    if [ "$__po_value" != true ] && [ "$__po_value" != false ]; then
      echo "$0: expected \"true\" or \"false\": $__po_opt $__po_value" >&2; exit 1
    fi
  fi
  printf -v "$__po_name" '%s' "$__po_value"
done
unset __po_name __po_value __po_opt __po_old

# An empty --cmd is almost always a scripting error (e.g. an unset $train_cmd).
if [ -n "${cmd+x}" ] && [ -z "$cmd" ]; then
  echo "$0: empty argument to --cmd option" >&2; exit 1
fi
true
