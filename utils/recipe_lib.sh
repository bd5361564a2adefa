# What the recipes share, sourced from the recipe dir:  . utils/recipe_lib.sh
# (run.sh after utils/parse_options.sh; the local/run_*.sh scripts the same way).
#
#   recipe_lock <cmdline>          one run at a time in the recipe dir (flock on .run.lock)
#   check_stage_options <last>     --stage, --stop-stage (0..<last>) and --nj, before any stage
#   check_choice <option> <value> <allowed>...  a word option's value is one of <allowed>
#   check_recipe_inputs <inputs> <restart> <dir>...
#                                  data/recipe_inputs.txt: a run with other inputs than the one
#                                  that made <dir>s is refused naming --restart true, which
#                                  removes them first
#   stage_begin <record> [--note=name=value]... [name=value | input]...
#                                  sets $stage_status: done | new | partial | changed
#                                  (pybin/stage_record.py; hybridasr/recipe/stage_record.py)
#   stage_finish <record>          the stage's last write: its record marked complete
#   run_stage <n>, banner <n> <what>   whether stage <n> is in --stage..--stop-stage; its header
#   up_to_date <output> <input>... <output> is there (not empty) and newer than each <input>
#   best_wer_of <decode-dir>, scored_normalized <decode-dir>   what a decode dir's scoring holds
#   needs_training <exp-dir> [<stage-status>]   whether to train it, and $train_restart
#   make_feats, split_tr_cv, make_graph   features, the tr/cv split, a graph: each unless made
# and, for the any-Kaldi-dir recipe (egs/kaldi_dir/s5/run.sh), its options resolved from the
# Kaldi dir and data/train: resolve_kaldi_dir_options, resolve_data_defaults,
# resolve_feat_config, check_decode_sets, seq_epochs_now, in_kaldi_dir (below); for its
# --chain true: check_chain_options, resolve_chain_lats, make_chain_lat_data (recipe_chain_lib.sh).
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

check_choice() {
  local opt=$1 value=$2 allowed last; shift 2
  case " $* " in *" $value "*) return 0 ;; esac
  last=${!#}; allowed=$(echo "${*%"$last"}" | sed 's/ $//; s/ /, /g')
  echo "$0: --${opt//_/-} is $allowed or $last, not '$value'${check_choice_note:-}" >&2
  exit 1
}

run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
banner() { echo; echo "===== stage $1: $2 ($(date '+%F %T')) ====="; }

up_to_date() {
  local out=$1 in; shift
  [ -s "$out" ] || return 1
  for in in "$@"; do [ "$out" -nt "$in" ] || return 1; done
}

best_wer_of() {  # the best %WER of a decode dir's wer_* (or "-")
  local w; w=$(grep -h '%WER' "$1"/wer_* 2>/dev/null | sort -n -k2 | head -n 1 | awk '{print $2}' || true)
  echo "${w:--}%"
}

scored_normalized() {  # whether a decode dir was scored with --ref-normalize true
  if [ -f "$1/scoring/reference.json" ]; then json_get.py "$1/scoring/reference.json" normalized 2>/dev/null
  else echo false; fi
}

# make_feats <mfcc|fbank> <conf> <data-dir>...: features and CMVN stats of each data dir (into
# <feat-type>/, logs in exp/make_<feat-type>/<name>), unless it has feats.scp and cmvn.scp; with
# --use-kaldi-feats true ($use_kaldi_feats) one without them is an error
make_feats() {
  local type=$1 conf=$2 x; shift 2
  for x in "$@"; do
    if [ -s $x/feats.scp ] && [ -s $x/cmvn.scp ]; then
      echo "$x already has feats.scp and cmvn.scp: skipping"; continue
    elif [ "${use_kaldi_feats:-false}" == true ]; then
      echo "$0: $x has no feats.scp/cmvn.scp: run stage 0 again with --use-kaldi-feats true" >&2
      exit 1
    fi
    steps/make_$type.sh --nj $nj --cmd "$train_cmd" --$type-config "$conf" $x exp/make_$type/${x##*/} $type
    steps/compute_cmvn_stats.sh $x exp/make_$type/${x##*/} $type
  done
}

# split_tr_cv [utils/subset_data_dir_tr_cv.sh option]...: data/train_tr90 and data/train_cv10
# from data/train, unless both are there
split_tr_cv() {
  if [ -s data/train_tr90/feats.scp ] && [ -s data/train_cv10/feats.scp ]; then
    echo "data/train_tr90 and data/train_cv10 exist: skipping"
  else
    utils/subset_data_dir_tr_cv.sh "$@" data/train data/train_tr90 data/train_cv10
  fi
}

# make_graph <lang-dir> <model-dir> <graph-dir>: utils/mkgraph.sh, unless <graph-dir>/HCLG.fst
# was made after the model and the LM
make_graph() {
  if up_to_date $3/HCLG.fst $2/final.mdl $1/G.fst; then echo "$3 is already made: skipping"
  else utils/mkgraph.sh "$1" $2 $3; fi
}

# needs_training <exp-dir> [<stage-status>]: whether steps/nnet/train.sh (or train_ctc.sh) is to
# train <exp-dir>: not when its final.nnet is there (said: delete it to train again). Sets
# $train_restart: true (from scratch) when <stage-status> is changed (made from other inputs)
# or final.nnet was deleted after a finished training; else false (new, or a killed one resumes)
needs_training() {
  local d=$1 status=${2:-}
  train_restart=false
  if [ "$status" == changed ] && [ -e $d/train_state.json ]; then
    echo "$d was trained from other inputs (above): training again from scratch"
    rm -f $d/final.nnet; train_restart=true
  fi
  if [ -e $d/final.nnet ]; then
    echo "$d/final.nnet exists: skipping (delete it to train again)"
    return 1
  fi
  if [ -f $d/train_state.json ] && [ "$(json_get.py $d/train_state.json done)" == true ]; then
    echo "$d/final.nnet was deleted after a finished training: training again from scratch"
    train_restart=true
  fi
  return 0
}

# --- the any-Kaldi-dir recipe (egs/kaldi_dir/s5/run.sh) --------------------------------------

# resolve_kaldi_dir_options: its word options checked, --kaldi-dir absolute (empty: the calling
# recipe's $default_kaldi_dir), --fmllr auto resolved (true when --ali is a SAT dir: trans.*
# beside ali.*.gz; it needs the GMM's own MFCC features and no speed perturbation), and the
# dirs the stages use: $dir, $gmm (false: --ali none), $gmm_decode, $lang_dir (alignment and
# training; data/lang when made from a dict dir), $lang_test (the graphs' G.fst), $graph_dir
resolve_kaldi_dir_options() {
  check_choice_note=" (there is no steps/make_$feat_type.sh)" check_choice feat_type "$feat_type" mfcc fbank auto
  check_choice speed_perturb "$speed_perturb" true false auto
  check_choice seq_criterion "$seq_criterion" smbr mmi
  case "$seq_epochs" in
    auto) ;;
    ''|*[!0-9]*) echo "$0: --seq-epochs is a number of epochs or auto, not '$seq_epochs'" >&2; exit 1 ;;
  esac
  check_choice realign_init "$realign_init" previous scratch
  check_choice flat_objective "$flat_objective" gmm fullsum ce
  [ -n "$kaldi_dir" ] || kaldi_dir=${default_kaldi_dir:-}
  if [ -z "$kaldi_dir" ]; then
    echo "$0: --kaldi-dir is required: the Kaldi s5 dir to build on" >&2; exit 1
  elif [ ! -d "$kaldi_dir" ]; then
    echo "$0: --kaldi-dir $kaldi_dir does not exist" >&2; exit 1
  fi
  kaldi_dir=$(cd "$kaldi_dir" && pwd -P)
  # --train, --test, --lang, --ali, --graph, --gmm-decode given as absolute paths: made
  # relative to the Kaldi dir, as every stage joins them to it ("$kaldi_dir/$ali")
  local v
  for v in train test lang ali graph gmm_decode; do
    case "${!v}" in /*) printf -v "$v" '%s' "$(realpath -m --relative-to="$kaldi_dir" "${!v}")" ;; esac
  done
  [ -n "$gmm_decode" ] || gmm_decode=$(dirname "$graph")/decode
  dir=exp/$exp_name
  check_choice fmllr "$fmllr" true false auto
  local sat=false
  [ "$ali" != none ] && [ -f "$kaldi_dir/$ali/trans.1" ] && sat=true
  if [ "$fmllr" == auto ]; then
    fmllr=$sat
    if [ $sat == true ]; then
      echo "$0: --fmllr true (auto: $ali is a SAT dir, with trans.*: training and decoding on its fMLLR features)"
    fi
  elif [ "$fmllr" == true ] && [ $sat == false ]; then
    echo "$0: --fmllr true needs a SAT --ali dir (trans.* beside ali.*.gz); $kaldi_dir/$ali has no trans.1" >&2
    exit 1
  fi
  if [ "$fmllr" == true ]; then
    case "$feat_type" in
      auto) feat_type=mfcc; echo "$0: --feat-type mfcc (--fmllr true: the GMM's own features)" ;;
      mfcc) ;;
      *) echo "$0: --fmllr true: the fMLLR transforms apply to the GMM's own features (mfcc), not $feat_type" >&2; exit 1 ;;
    esac
    if [ -z "$feat_config" ] && [ $use_kaldi_feats == false ] && [ ! -f "$kaldi_dir/conf/mfcc.conf" ]; then
      echo "$0: --fmllr true: $kaldi_dir has no conf/mfcc.conf, the GMM's MFCC options: give" \
        "--feat-config or --use-kaldi-feats true" >&2
      exit 1
    fi
    case "$speed_perturb" in
      auto) speed_perturb=false
            echo "$0: --speed-perturb false (--fmllr true: the perturbed copies have no fMLLR transforms)" ;;
      true) echo "$0: --speed-perturb true and --fmllr true: the perturbed copies have no fMLLR" \
              "transforms; give --fmllr false or --speed-perturb false" >&2; exit 1 ;;
    esac
  fi
  gmm=true; [ "$ali" == none ] && gmm=false
  lang_dir=$kaldi_dir/$lang
  lang_test=$lang_dir
  graph_dir=$kaldi_dir/$graph
  if [ $gmm == true ] && [ ! -f "$lang_dir/L.fst" ] && [ ! -f "$lang_dir/words.txt" ] && \
      { [ -f "$lang_dir/lexicon.txt" ] || [ -f "$lang_dir/lexiconp.txt" ]; }; then
    # a dict dir beside a GMM: stage 0 makes data/lang from it, checked to have the alignment
    # model's phones; decoding keeps --graph (its own words.txt); --lm-arpa/--lm-text make
    # data/lang_test, the G.fst of the graphs made here (--chain true)
    lang_dir=data/lang
    lang_test=$lang_dir
    [ -z "$lm_arpa$lm_text" ] || lang_test=data/lang_test
  fi
  if [ $gmm == false ]; then
    [ -f "$lang_dir/L.fst" ] || lang_dir=data/lang  # made from --lang's dict dir in stage 0
    lang_test=$lang_dir
    if [ -n "$lm_arpa$lm_text" ] || [ ! -f "$lang_dir/G.fst" ]; then lang_test=data/lang_test; fi
    graph_dir=$dir/graph
  fi
  check_chain_options
}

# kaldi_dir_recipe_inputs: what data/ and exp/ are made from (check_recipe_inputs): a later run
# with another Kaldi dir, alignment or features would mix its stages with the old outputs
kaldi_dir_recipe_inputs() {
  local inputs="kaldi_dir=$kaldi_dir train=$train test=$test lang=$lang ali=$ali graph=$graph"
  # (feat_config: --feat-config as given; the conf made from the audio is stage 1's input)
  inputs="$inputs use_kaldi_feats=$use_kaldi_feats feat_type=$feat_type feat_config=$feat_config"
  inputs="$inputs num_leaves=$num_leaves lm_arpa=$lm_arpa lm_text=$lm_text lm_order=$lm_order"
  [ "$speed_perturb" != false ] && inputs="$inputs speed_perturb=$speed_perturb"
  [ "$fmllr" == true ] && inputs="$inputs fmllr=true"
  echo "$inputs"
}

# import_kaldi_data_dir <data-dir> <dest>: <data-dir> of --kaldi-dir copied into <dest> (with
# its features where --use-kaldi-feats true), unless <dest> is already imported from it
import_kaldi_data_dir() {
  local stamp="$kaldi_dir/$1 use_kaldi_feats=$use_kaldi_feats"
  if [ -f $2/.imported ] && [ "$(cat $2/.imported)" == "$stamp" ]; then
    echo "$2 is already imported from $kaldi_dir/$1: skipping"
  else
    import_data_dir.py --keep-feats=$use_kaldi_feats "$kaldi_dir" "$kaldi_dir/$1" $2
    echo "$stamp" > $2/.imported
  fi
}

# feats_missing <data-dir>...: " <data-dir>: <n> of <u>;" for each with fewer features than
# utterances (an utterance whose audio could not be read is counted and skipped)
feats_missing() {
  local x n u
  for x in "$@"; do
    n=$(wc -l < $x/feats.scp); u=$(wc -l < $x/utt2spk)
    if [ $n -lt $u ]; then echo -n " $x: $n of $u;"; fi
  done
}

# paths given inside --kaldi-dir, or absolute
in_kaldi_dir() { case "$1" in /*) echo "$1" ;; *) echo "$kaldi_dir/$1" ;; esac; }

# --feat-type, --speed-perturb, --model-config, --batching-config, --schedule-config and
# --chain-model-config given as auto: chosen from data/train's size once stage 0 has made it
# (hybridasr/recipe/data_defaults.py; the choices and their reasons in data/defaults.json, copied
# beside each trained model). --batching-config auto goes with the model: the rule's where
# --model-config is auto too, else conf/batching.conf (whole utterances). The networks that
# train on whole utterances (the flat start's full-sum, CTC) get $seq_batching_config: the
# --batching-config given, else conf/batching.conf; --flat-model-config and
# --flat-batching-config default to the --model-config and --batching-config given, else to
# the rule's flat_model_config and $seq_batching_config.
resolve_data_defaults() {
  local auto=false x model_auto=false
  gmm_weight_given=true  # (false where the rule chooses it)
  case "$model_config" in auto|'') model_auto=true ;; esac
  seq_batching_config=$batching_config
  case "$batching_config" in auto|'') seq_batching_config=conf/batching.conf ;; esac
  # (a recipe without --chain-model-config leaves it unset: not chosen)
  for x in "$feat_type" "$speed_perturb" "$model_config" "$schedule_config" "${chain_model_config-set}" \
      "${gmm_weight-set}"; do
    case "$x" in auto|'') auto=true ;; esac
  done
  if [ $auto == false ]; then
    [ "$batching_config" == auto ] && batching_config=$seq_batching_config
    return 0
  fi
  if [ ! -s data/train/utt2spk ]; then
    echo "$0: --feat-type, --speed-perturb, --model-config, --schedule-config," \
      "--chain-model-config and --gmm-weight auto are chosen from data/train, which stage 0" \
      "makes: run it first (--stage 0)" >&2
    exit 1
  fi
  choose_defaults.py --use-kaldi-feats=$use_kaldi_feats --flat-start=$([ $gmm == true ] && echo false || echo true) \
    data/train data/defaults.json
  local chosen x1 x2 x3 x4 x5 x6 x7 x8
  chosen=$(json_get.py data/defaults.json chosen.feat_type.value chosen.speed_perturb.value \
    chosen.model_config.value chosen.schedule_config.value chosen.chain_model_config.value \
    chosen.batching_config.value chosen.flat_model_config.value chosen.gmm_weight.value 2>/dev/null)
  read -r -d '' x1 x2 x3 x4 x5 x6 x7 x8 <<< "$chosen" || true
  [ "$feat_type" == auto ] && feat_type=$x1
  [ "$speed_perturb" == auto ] && speed_perturb=$x2
  [ $model_auto == true ] && model_config=$x3
  case "$batching_config" in
    auto|'') batching_config=$seq_batching_config; [ $model_auto == true ] && batching_config=$x6 ;;
  esac
  case "$schedule_config" in auto|'') schedule_config=$x4 ;; esac
  case "${chain_model_config-set}" in auto|'') chain_model_config=$x5 ;; esac
  if [ $model_auto == true ] && [ -z "${flat_model_config-set}" ]; then flat_model_config=$x7; fi
  case "${gmm_weight-set}" in auto|'') gmm_weight=$x8; gmm_weight_given=false ;; esac
  return 0
}

# --gmm-weight (auto: the data-size rule's): above 0, every decoding of the network and of the
# models trained from it on its tree (realignment rounds, sequence training) adds the
# log-likelihoods of the GMM of --ali (steps/nnet/decode.sh --gmm-dir, in $decode_opts), on its
# own features: the fMLLR data's as they are, else its dir's pipeline on the MFCCs here. Those
# must be the GMM's own features: once stage 1 has made them (`resolve_gmm_fusion recheck` at
# its end), compare_feats.py compares data/test's (with --fmllr data/test_gmm's, the raw MFCCs)
# with the Kaldi dir's own feats.scp of --test, what the GMM was trained and decoded on, into
# data/gmm_features.json. Where it cannot (no GMM, fbank, another sample rate or conf than the
# GMM's, no Kaldi features to compare with) the rule's choice is dropped with a note; a given
# one is an error.
resolve_gmm_fusion() {
  local why= check=data/gmm_features.json ours=data/test/feats.scp theirs=$kaldi_dir/$test/feats.scp
  user_decode_opts=${user_decode_opts-$decode_opts}; decode_opts=$user_decode_opts
  if ! awk -v w="$gmm_weight" 'BEGIN { exit !(w + 0 == w && w >= 0 && w <= 1) }'; then
    echo "$0: --gmm-weight $gmm_weight: a number from 0 to 1, or auto" >&2; exit 1
  fi
  awk -v w="$gmm_weight" 'BEGIN { exit !(w > 0) }' || return 0
  [ $fmllr == true ] && ours=data/test_gmm/feats.scp
  if [ $gmm == true ] && [ $use_kaldi_feats == false ] && [ -s $ours ] &&
      { [ "${1:-}" == recheck ] || [ ! -f $check ]; }; then
    if [ -s "$theirs" ]; then
      compare_feats.py --base2="$kaldi_dir" $ours "$theirs" > $check 2> $check.log ||
        echo "{\"same\": false, \"note\": \"its features could not be read: see $check.log\"}" > $check
    else
      echo "{\"same\": false, \"note\": \"$theirs does not exist\"}" > $check
    fi
  fi
  [ $gmm == false ] && why="there is no GMM (--ali none)"
  [ $gmm == true ] && [ "$(json_get.py data/kaldi_dir.json ali_model_is_gmm 2>/dev/null)" == false ] &&
    why="$ali/final.mdl is not a GMM"
  [ $gmm == true ] && [ $fmllr == false ] && [ $use_kaldi_feats == false ] && [ "$feat_type" != mfcc ] &&
    why="its GMM reads MFCCs, the network $feat_type"
  if [ -z "$why" ] && [ $use_kaldi_feats == false ] && [ -f $check ] &&
      [ "$(json_get.py $check same 2>/dev/null)" != true ]; then
    why="the features made here are not shown to be the ones it was trained on ($check: $(json_get.py $check note 2>/dev/null || true))"
  fi
  if [ -n "$why" ] && [ "$gmm_weight_given" == true ]; then
    echo "$0: --gmm-weight $gmm_weight: $why; give --gmm-weight 0" >&2; exit 1
  elif [ -n "$why" ]; then
    echo "$0: --gmm-weight 0 (the rule's $gmm_weight dropped: $why)"; gmm_weight=0; return 0
  fi
  decode_opts="--gmm-dir $kaldi_dir/$ali --gmm-weight $gmm_weight --gmm-feats $([ $fmllr == true ] && echo asis || echo pipeline)${user_decode_opts:+ $user_decode_opts}"
}

# the features' conf, made when stage 1 runs: --feat-config as given; else data/<feat-type>.conf
# at the audio's sample rate (make_feat_config.py reads the wav headers of data/train and
# data/test): <kaldi-dir>/conf/<feat-type>.conf where its rate (none named: Kaldi's 16000) fits
# the audio, else it, or without one the recipe's conf/<feat-type>.conf, with the audio's rate;
# mixed rates resampled to the most common one (--allow-downsample/--allow-upsample, counted).
# Rewritten only when it changes. --use-kaldi-feats true computes none: the conf is only recorded.
resolve_feat_config() {
  [ -n "$feat_config" ] && return 0
  if [ $use_kaldi_feats == true ]; then
    feat_config=conf/$feat_type.conf
    [ -f "$kaldi_dir/conf/$feat_type.conf" ] && feat_config=$kaldi_dir/conf/$feat_type.conf
    return 0
  fi
  make_feat_config.py --kaldi-conf="$kaldi_dir/conf/$feat_type.conf" \
    --recipe-conf=conf/$feat_type.conf $feat_type data/$feat_type.conf data/train data/test
  feat_config=data/$feat_type.conf
}

# each of --decode-sets has features (checked before anything is decoded or recorded)
check_decode_sets() {
  local x
  for x in $decode_sets; do
    if [ ! -s data/$x/feats.scp ]; then
      echo "$0: --decode-sets names data/$x, which has no feats.scp (the recipe makes data/test," \
        "and in stage 2 data/train_tr90 and data/train_cv10)" >&2
      exit 1
    fi
  done
}

# --seq-epochs, auto resolved on data/train_tr90's size (made in stage 2)
seq_epochs_now() {
  if [ "$seq_epochs" != auto ]; then echo $seq_epochs
  elif [ -f data/train_tr90/utt2spk ] && [ $(wc -l < data/train_tr90/utt2spk) -ge $seq_min_utts ]; then echo 4
  else echo 0; fi
}

# run.sh --chain true: check_chain_options, resolve_chain_lats, make_chain_lat_data
. "$(dirname "${BASH_SOURCE[0]}")/recipe_chain_lib.sh"
