#!/usr/bin/env bash
# hybridasr default recipe: a hybrid BLSTM/HMM acoustic model on top of an existing Kaldi s5 dir.
# The Kaldi dir is only ever read; everything is written under this recipe's data/, exp/, mfcc/.
#
# Stages:
#   0  check the Kaldi dir, copy its data dirs into data/
#   1  features (MFCC or fbank) and CMVN stats (or reuse the Kaldi dir's: --use-kaldi-feats true)
#   2  import the GMM alignments; train/cv split by speaker (by utterance when too few speakers).
#      --ali none (no GMM): flat start instead (steps/nnet/train_flatstart.sh: equal alignment,
#      a monophone network, --flat-rounds rounds of realign-and-retrain into exp/flat), then
#      a context-dependent tree of --num-leaves leaves grown from the last monophone network's
#      alignment (steps/nnet/build_tree.sh into exp/tri_ali), imported as stage 3's targets;
#      the lang dir is --lang's, or made from it when it is a dict dir (utils/prepare_lang.sh),
#      G.fst from it or from --lm-arpa / --lm-text (utils/format_lm.sh, make_ngram_lm.sh)
#   3  train the network
#   4  decode data/test (with --ali none: on graphs made here, utils/mkgraph.sh; Kaldi's latgen-faster-mapped when on PATH, else the embedded decoder), score;
#      then --realign-iters rounds (steps/nnet/realign_round.sh): align data/train with the
#      current network (exp/<name>_ali<k>), import it, retrain (exp/<name>_re<k>); decode, score
#   5  summary: best WER next to the GMM system's, training speed, curves and logs
set -euo pipefail

# Begin configuration section.
stage=0
stop_stage=5
kaldi_dir=           # default: ../shared/data/kaldi_digits beside the hybridasr checkout
train=data/train     # the names below are inside --kaldi-dir
test=data/test
lang=data/lang       # a lang dir, or a dict dir (data/local/dict) to make data/lang from
ali=exp/mono_ali      # none: no GMM, flat start (stage 2)
graph=exp/mono/graph # with --ali none: made here (exp/<name>/graph, exp/flat/graph)
gmm_decode=          # the GMM system's decode dir to compare with (default: <graph>/../decode)
use_kaldi_feats=false
feat_type=auto       # mfcc|fbank|auto (auto: after stage 0, from data/train's size:
                     # data/defaults.json, hybridasr/recipe/data_defaults.py)
feat_config=         # default: data/<feat-type>.conf at the audio's sample rate (wav headers):
                     # <kaldi-dir>/conf/<feat-type>.conf where its rate fits, else it (or
                     # conf/<feat-type>.conf) with the rate replaced; mixed rates resampled
nj=2
model_config=auto    # auto: by data/train's hours (data/defaults.json): conf/model/blstm_small.conf
                     # (2x128) below 0.5 h, blstm_medium.conf (2x256) below 20 h, else blstm.conf
batching_config=conf/batching.conf
schedule_config=auto # auto: conf/schedule.conf (newbob on the cv loss), or where stage 2 trains
                     # on every utterance (a corpus too small to hold out a cv set whose words
                     # training has, e.g. 10 utterances of 10 digits, or one too small to judge
                     # an epoch: under 5 utterances or 10 words) conf/schedule_all_data.conf
device=cpu           # cpu|cuda|auto (training and decoding)
nproc=1              # processes (GPUs) for torchrun; >1 uses torch.distributed
parallel=            # with --nproc > 1: ddp (default) | average
train_opts=          # more options for pybin/train.py, e.g. "--amp=bf16 --max-iters=10"
torchrun_opts=       # torchrun's own options, e.g. "--nnodes 2 --rdzv-endpoint host:29400"
decode_opts=         # more options for steps/nnet/decode.sh
ref_normalize=false  # true: score against the reference words read as alignment reads them
                     # (lower-cased, without punctuation, where words.txt has them that way),
                     # the GMM's lattices too; false: as given, as Kaldi scores (steps/score.sh)
exp_name=blstm
realign_iters=0      # align-and-retrain rounds after the first model (stage 4)
realign_init=previous # previous: a round goes on training the model that aligned (train.py
                     # --init-model, nnet1's --nnet-init) at the learning rate its schedule ended
                     # at (its train_state.json) | scratch: each round trains a new model
realign_prior_scale=0.5 # prior scale of the rounds' alignment (decoding keeps its own)
realign_train_opts=  # more train.py options for the rounds' training only (after --train-opts),
                     # e.g. "--learning-rate=0.0002"
align_opts=          # more options for steps/nnet/align.sh in the rounds, e.g. "--beam 20"
decode_sets=test     # data dirs under data/ each model decodes into <exp>/decode_<set>, e.g.
                     # "test train_cv10" (train_cv10: the 10% of data/train held out from
                     # training: more words than a small test set to compare models on)
flat_objective=fullsum # --ali none: the first flat-start network's objective: fullsum
                     # (Baum-Welch over each utterance's training graph) | ce (cross-entropy
                     # on the equal alignment); steps/nnet/train_flatstart.sh --first-objective
flat_rounds=1        # --ali none: realign-and-retrain rounds of the monophone flat start
flat_model_config=   # --ali none: model and batching confs of the flat-start networks
flat_batching_config= # (default: --model-config, --batching-config)
flat_train_opts=     # --ali none: train.py options of the flat-start networks (after --train-opts)
flat_first_subset=0  # --ali none: >0: the first flat-start network trains on this many of the
                     # shortest utterances (steps/nnet/train_flatstart.sh --first-subset)
num_leaves=1000      # --ali none: leaves of the context-dependent tree (0: no tree, the
                     # recipe's network is trained on the last monophone alignment)
lm_arpa=             # --ali none and no G.fst in --lang: an ARPA LM (inside --kaldi-dir or
lm_text=             # absolute), or text to estimate one from (one sentence a line)
lm_order=3           # order of the LM estimated from --lm-text
seq_epochs=auto      # sequence training after CE (stage 4; steps/nnet/train_mpe.sh): epochs
                     # of --seq-criterion on denominator lattices of the last model
                     # (exp/<name>_denlats) into exp/<name>_smbr (or _mmi); auto: 4 where
                     # data/train_tr90 has at least $seq_min_utts utterances, else 0 (on
                     # kaldi_polish's 486 it gains only with --ref-normalize true, as much as CE
                     # on the same alignment does: docs/sequence_training.md)
seq_min_utts=1000
seq_criterion=smbr   # smbr | mmi
seq_frame_smoothing=0.3 # weight of frame cross-entropy in the sequence gradient (train_mpe.sh
                     # --frame-smoothing; kaldi_polish: 0.3 gained 2-3% more than 0 on both seeds)
seq_opts=            # more options for steps/nnet/train_mpe.sh, e.g. "--learn-rate 0.00002"
                     # (with speed perturbation, sequence training is on data/train_sp: the
                     # numerator its alignment, the denominator its lattices)
restart=false        # true: remove data/ exp/ mfcc/ fbank/ of an earlier run first (needed when
                     # --kaldi-dir, --ali, --feat-type, ... differ from the run that made them)
oov_word=            # the lexicon's OOV entry when --lang is a dict dir (default: the first
                     # of <UNK> <unk> <SPOKEN_NOISE> <spoken_noise> in its lexicon)
# CTC beside the hybrid network (issue 29): sentencepiece units, steps/nnet/train_ctc.sh
ctc=false            # true: also train exp/<name>_ctc (stage 3) on data/train_tr90, decode it
                     # with the TLG graph and without one (stage 4), summary (stage 5)
ctc_units_config=conf/ctc/units.conf  # the units (steps/nnet/train_units.sh)
ctc_model_config=conf/ctc/model.conf  # the CTC network
ctc_train_config=conf/ctc/train.conf  # its train.py options (frame stacking, subsampling)
ctc_acwt=1.0         # acoustic scale of the TLG decoding (no priors, the network's own frames)
ctc_decode_opts="--lattice-beam 5"  # more steps/nnet/decode.sh options of the TLG decoding
ctc_scoring_opts="--min-lmwt 1 --max-lmwt 5"  # LM weights of the TLG route's scoring
ctc_beam_size=8      # prefix beam search of the route without a graph (besides greedy)
# speed perturbation (issue 30): utils/data/perturb_data_dir_speed_3way.sh, steps/perturb_ali.sh
speed_perturb=auto   # auto: true where a cv set can be held out (data/defaults.json)
                     # true: stage 1 makes data/train_sp (speeds 0.9, 1.0, 1.1) with features,
                     # stage 2 its targets (exp/ali_train_sp: the GMM alignment resampled to
                     # each copy's frames) and data/train_sp_tr90 (the 3 copies of every
                     # data/train_tr90 utterance; data/train_cv10 stays unperturbed), stage 3
                     # trains on it (realignment rounds and sequence training keep data/train)
# speaker adaptation: fMLLR features of a SAT GMM, as nnet1's steps/nnet/make_fmllr_feats.sh
fmllr=auto           # auto: true when --ali is a SAT dir (trans.* beside ali.*.gz) | true | false.
                     # true: stage 1 makes data/train and data/test the GMM's fMLLR features
                     # (its own MFCC+CMVN (cmvn_opts), splice_opts, final.mat, per-speaker
                     # trans.*: --ali's for train, the decode dir beside --graph's for test);
                     # needs mfcc features (Kaldi's conf/mfcc.conf) and no speed perturbation
# End configuration section.

help_message="Usage: $0 [options]
 e.g.: $0 --kaldi-dir ~/kaldi/egs/wsj/s5 --train data/train_si284 --ali exp/tri4b_ali_si284 \\
          --graph exp/tri4b/graph_tgpr --test data/test_dev93
Stages: 0 check+copy Kaldi dir, 1 features, 2 alignments+cv split, 3 train, 4 decode+score, 5 summary
Options (default):
  --stage N / --stop-stage M   # run stages N..M ($stage..$stop_stage)
  --kaldi-dir DIR              # an existing Kaldi s5 dir (../shared/data/kaldi_digits)
  --train, --test, --lang      # data dirs inside it ($train, $test, $lang)
  --ali, --graph               # GMM alignment dir and graph dir inside it ($ali, $graph);
                               # --lang may be a dict dir (data/local/dict): stage 0 makes
                               # data/lang from it (utils/prepare_lang.sh), its phones the GMM's
  --ali none                   # no GMM: flat start, own tree and graphs; --lang may then be a
                               # dict dir (lexicon.txt, *_phones.txt: e.g. data/local/dict)
  --flat-objective fullsum|ce  # --ali none: the first flat-start network's ($flat_objective)
  --flat-rounds N, --num-leaves N  # --ali none: flat-start rounds ($flat_rounds), leaves of the
                               # CD tree ($num_leaves; 0: monophone network only)
  --flat-model-config, --flat-batching-config  # --ali none: the flat-start networks' confs
                               # (default: --model-config, --batching-config)
  --flat-train-opts \"...\"      # --ali none: train.py options of the flat-start networks
  --flat-first-subset N        # --ali none: the first network on the N shortest utterances ($flat_first_subset: all)
  --lm-arpa FILE, --lm-text FILE, --lm-order N  # --ali none, lang without G.fst: the LM
  --oov-word WORD              # --ali none, dict dir: the lexicon's OOV entry
  --use-kaldi-feats true|false # reuse the Kaldi dir's feats.scp/cmvn.scp ($use_kaldi_feats)
  --feat-type mfcc|fbank|auto  # ($feat_type: fbank from 0.5 h of training audio, else mfcc)
  --model-config, --batching-config, --schedule-config  # conf files ($model_config, $batching_config,
                               # $schedule_config; auto: chosen from data/train's size after stage 0,
                               # written with the reasons to data/defaults.json)
  --device cpu|cuda|auto, --nproc N # training and decoding device, training processes ($device, $nproc)
  --parallel ddp|average       # multi-process scheme with --nproc > 1 (ddp)
  --train-opts, --torchrun-opts, --decode-opts  # passed through
  --ref-normalize true|false   # score against reference words read as alignment reads them,
                               # the GMM's lattices too ($ref_normalize: Kaldi's scoring)
  --nj N                       # parallel jobs for features, alignment and decoding ($nj)
  --realign-iters N            # rounds of: align data/train with the network into exp/<name>_ali<k>,
                               # retrain on it into exp/<name>_re<k>, decode+score ($realign_iters)
  --realign-init previous|scratch # a round goes on training the model that aligned at the
                               # learning rate its schedule ended at, or trains a new model
                               # ($realign_init; docs/alignment.md has both measured)
  --realign-prior-scale S      # prior scale of the rounds' alignment ($realign_prior_scale)
  --realign-train-opts \"...\"   # train.py options of the rounds only (\"$realign_train_opts\")
  --align-opts \"...\"           # passed to steps/nnet/align.sh in the rounds (\"$align_opts\")
  --seq-epochs N|auto          # sequence training epochs after CE ($seq_epochs: 4 from
                               # $seq_min_utts training utterances, else 0)
  --seq-criterion smbr|mmi     # ($seq_criterion); --seq-opts \"...\": steps/nnet/train_mpe.sh's
  --seq-frame-smoothing H      # frame cross-entropy's weight in sequence training ($seq_frame_smoothing)
  --restart true               # remove data/ exp/ mfcc/ fbank/ of an earlier run first (a run
                               # with other inputs than the one that made them is refused)
  --decode-sets \"X Y\"          # data/X, data/Y decoded by every model into <exp>/decode_X, ...
                               # (\"$decode_sets\"; \"test train_cv10\" adds the held-out cv split)
  --speed-perturb true|false|auto # stage 3 trains on data/train_sp_tr90: data/train_tr90 at speeds 0.9, 1.0, 1.1
                               # (cv unperturbed, no copy of a cv utterance in training)
                               # ($speed_perturb: true where a cv set can be held out)
  --fmllr true|false|auto      # train/decode on the SAT GMM's fMLLR features ($fmllr; auto: true
                               # when --ali has trans.*; test transforms: <graph>/../decode*/trans.*)
  --ctc true|false             # also a CTC network over sentencepiece units, exp/<name>_ctc ($ctc)
  --ctc-units-config, --ctc-model-config, --ctc-train-config  # its confs (conf/ctc/*.conf)
  --ctc-acwt S, --ctc-decode-opts \"...\", --ctc-scoring-opts \"...\", --ctc-beam-size N  # its decoding
                               # (TLG at the network's frame rate, acwt $ctc_acwt; prefix beam $ctc_beam_size)"

echo "$0 $@"
cmdline="$0 $*"
cd "$(dirname "$0")"
. utils/recipe_lib.sh  # (issue 32: shared with the other recipes)
# one run at a time in a recipe dir: a second one exits at once naming the first
recipe_lock "$cmdline"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 0 ]; then
  echo "$help_message" >&2
  exit 1
fi

# the numeric options, checked before any stage runs
check_stage_options 5
case "$feat_type" in
  mfcc|fbank|auto) ;;
  *) echo "$0: --feat-type is mfcc, fbank or auto, not '$feat_type' (there is no steps/make_$feat_type.sh)" >&2; exit 1 ;;
esac
case "$speed_perturb" in
  true|false|auto) ;;
  *) echo "$0: --speed-perturb is true, false or auto, not '$speed_perturb'" >&2; exit 1 ;;
esac
case "$seq_criterion" in
  smbr|mmi) ;;
  *) echo "$0: --seq-criterion is smbr or mmi, not '$seq_criterion'" >&2; exit 1 ;;
esac
case "$seq_epochs" in
  auto) ;;
  ''|*[!0-9]*) echo "$0: --seq-epochs is a number of epochs or auto, not '$seq_epochs'" >&2; exit 1 ;;
esac
case "$realign_init" in
  previous|scratch) ;;
  *) echo "$0: --realign-init is previous or scratch, not '$realign_init'" >&2; exit 1 ;;
esac
[ -z "$kaldi_dir" ] && kaldi_dir=$HYBRIDASR_ROOT/../shared/data/kaldi_digits
if [ ! -d "$kaldi_dir" ]; then
  echo "$0: --kaldi-dir $kaldi_dir does not exist" >&2
  exit 1
fi
kaldi_dir=$(cd "$kaldi_dir" && pwd -P)
[ -z "$gmm_decode" ] && gmm_decode=$(dirname "$graph")/decode
dir=exp/$exp_name

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
# --fmllr: auto is true when --ali is a SAT dir (per-speaker trans.* of fMLLR transforms);
# true forces the GMM's own MFCC features and no speed perturbation (the copies have no transforms)
case "$fmllr" in
  true|false|auto) ;;
  *) echo "$0: --fmllr is true, false or auto, not '$fmllr'" >&2; exit 1 ;;
esac
sat=false
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
# What data/ and exp/ were made from: a later run with another Kaldi dir, alignment or features
# would mix its stages with the old outputs (each stage skips what exists), so it is refused,
# naming --restart; --restart true removes data/ exp/ mfcc/ fbank/ and starts over.
inputs="kaldi_dir=$kaldi_dir train=$train test=$test lang=$lang ali=$ali graph=$graph"
# (feat_config: --feat-config as given; the conf made from the audio is stage 1's input)
inputs="$inputs use_kaldi_feats=$use_kaldi_feats feat_type=$feat_type feat_config=$feat_config"
inputs="$inputs num_leaves=$num_leaves lm_arpa=$lm_arpa lm_text=$lm_text lm_order=$lm_order"
[ "$speed_perturb" != false ] && inputs="$inputs speed_perturb=$speed_perturb"  # (issue 30)
[ "$fmllr" == true ] && inputs="$inputs fmllr=true"
check_recipe_inputs "$inputs" "$restart" data exp mfcc fbank

# paths given inside --kaldi-dir, or absolute
in_kaldi_dir() { case "$1" in /*) echo "$1" ;; *) echo "$kaldi_dir/$1" ;; esac; }
gmm=true; [ "$ali" == none ] && gmm=false
lang_dir=$kaldi_dir/$lang    # the lang dir of alignment and training
lang_test=$lang_dir          # the lang dir whose G.fst the graphs use
graph_dir=$kaldi_dir/$graph  # the graph of the recipe's network
if [ $gmm == true ] && [ ! -f "$lang_dir/L.fst" ] && [ ! -f "$lang_dir/words.txt" ] && \
    { [ -f "$lang_dir/lexicon.txt" ] || [ -f "$lang_dir/lexiconp.txt" ]; }; then
  # a dict dir beside a GMM: stage 0 makes data/lang from it (utils/prepare_lang.sh), checked
  # to have the alignment model's phones; decoding keeps --graph (its own words.txt)
  lang_dir=data/lang
  lang_test=$lang_dir
fi
if [ $gmm == false ]; then
  [ -f "$lang_dir/L.fst" ] || lang_dir=data/lang  # made from --lang's dict dir in stage 0
  lang_test=$lang_dir
  if [ -n "$lm_arpa$lm_text" ] || [ ! -f "$lang_dir/G.fst" ]; then lang_test=data/lang_test; fi
  graph_dir=$dir/graph
fi

banner() { echo; echo "===== stage $1: $2 ($(date '+%F %T')) ====="; }
# --seq-epochs, auto resolved on data/train_tr90's size (made in stage 2)
seq_epochs_now() {
  if [ "$seq_epochs" != auto ]; then echo $seq_epochs
  elif [ -f data/train_tr90/utt2spk ] && [ $(wc -l < data/train_tr90/utt2spk) -ge $seq_min_utts ]; then echo 4
  else echo 0; fi
}
run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
best_wer_of() {  # the best %WER of a decode dir's wer_* (or "-")
  local w; w=$(grep -h '%WER' "$1"/wer_* 2>/dev/null | sort -n -k2 | head -n 1 | awk '{print $2}' || true)
  echo "${w:--}%"
}
start_time=$(date +%s)
# --feat-type, --speed-perturb, --model-config and --schedule-config given as auto: chosen from
# data/train's size once stage 0 has made it (hybridasr/recipe/data_defaults.py; the choices
# and their reasons in data/defaults.json, copied beside each trained model)
resolve_data_defaults() {
  local auto=false x
  for x in "$feat_type" "$speed_perturb" "$model_config" "$schedule_config"; do
    case "$x" in auto|'') auto=true ;; esac
  done
  [ $auto == true ] || return 0
  if [ ! -s data/train/utt2spk ]; then
    echo "$0: --feat-type, --speed-perturb, --model-config and --schedule-config auto are" \
      "chosen from data/train, which stage 0 makes: run it first (--stage 0)" >&2
    exit 1
  fi
  choose_defaults.py --use-kaldi-feats=$use_kaldi_feats data/train data/defaults.json
  local chosen x1 x2 x3 x4
  chosen=$(json_get.py data/defaults.json chosen.feat_type.value chosen.speed_perturb.value \
    chosen.model_config.value chosen.schedule_config.value 2>/dev/null)
  read -r -d '' x1 x2 x3 x4 <<< "$chosen" || true
  [ "$feat_type" == auto ] && feat_type=$x1
  [ "$speed_perturb" == auto ] && speed_perturb=$x2
  case "$model_config" in auto|'') model_config=$x3 ;; esac
  case "$schedule_config" in auto|'') schedule_config=$x4 ;; esac
  return 0
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

# whether <decode-dir> was scored with --ref-normalize true (steps/score.sh's reference.json)
scored_normalized() {
  if [ -f $1/scoring/reference.json ]; then json_get.py $1/scoring/reference.json normalized 2>/dev/null
  else echo false; fi
}

# decode_and_score <exp-dir> [<graph-dir> [<decode.sh option>...]]: decodes each of
# --decode-sets (data/<set>) with <exp-dir>/final.nnet on <graph-dir> (default: the recipe's)
# into <exp-dir>/decode_<set>, unless already scored; the options, where given, in place of
# --decode-opts
decode_and_score() {
  local d=$1 g=${2:-$graph_dir} x newest_wer spk decode_nj only_score opts
  shift; [ $# -gt 0 ] && shift
  # shellcheck disable=SC2206
  if [ $# -gt 0 ]; then opts=("$@"); else opts=($decode_opts); fi
  check_decode_sets
  for x in $decode_sets; do
    newest_wer=$(ls -t $d/decode_$x/wer_* 2>/dev/null | head -n 1 || true)
    only_score=
    if [ -n "$newest_wer" ] && [ "$newest_wer" -nt $d/final.nnet ]; then
      if [ "$(scored_normalized $d/decode_$x)" == $ref_normalize ]; then
        echo "$d/decode_$x is already scored: skipping"
        continue
      fi
      echo "$d/decode_$x: scoring again with --ref-normalize $ref_normalize"
      only_score="--stage 1"
    fi
    # decoding is split by speaker (as Kaldi's): at most one job per speaker
    spk=$(wc -l < data/$x/spk2utt); decode_nj=$(( nj < spk ? nj : spk ))
    if [ $decode_nj -lt $nj ]; then
      echo "$0: data/$x has $spk speaker(s): decoding with --nj $decode_nj"
    fi
    steps/nnet/decode.sh --nj $decode_nj --cmd "$decode_cmd" --device $device $only_score \
      --ref-normalize $ref_normalize ${opts[@]+"${opts[@]}"} "$g" data/$x $d/decode_$x
  done
}

# data/lang from --lang's dict dir (--ali none, or a GMM with a dict dir), and with --ali none
# data/lang_test with G.fst from --lm-arpa/--lm-text
make_lang_dirs() {
  local dict=$kaldi_dir/$lang oov=$oov_word w arpa lexicon=/dev/null
  if [ "$lang_dir" == data/lang ]; then
    if [ -s data/lang/L.fst ] && [ data/lang/L.fst -nt "$dict" ]; then
      echo "data/lang is already made from $dict: skipping"
    else
      if [ -z "$oov" ]; then
        for w in '<UNK>' '<unk>' '<SPOKEN_NOISE>' '<spoken_noise>'; do
          # (grep on the files: "cat | grep -q" fails under pipefail once grep stops early)
          if grep -qs "^$w[[:space:]]" "$dict"/lexicon*.txt; then oov=$w; break; fi
        done
        [ -z "$oov" ] && { echo "$0: the lexicon of $dict has none of <UNK> <unk>" \
          "<SPOKEN_NOISE> <spoken_noise>: give its OOV entry with --oov-word" >&2; exit 1; }
      fi
      utils/prepare_lang.sh "$dict" "$oov" data/local/lang_tmp data/lang
    fi
  fi
  [ -f "$dict/lexicon.txt" ] && lexicon=$dict/lexicon.txt
  if [ "$lang_test" == data/lang_test ]; then
    if [ -s data/lang_test/G.fst ] && [ data/lang_test/G.fst -nt "$lang_dir/L.fst" ]; then
      echo "data/lang_test already has G.fst: skipping"
      return
    fi
    if [ -n "$lm_arpa" ]; then
      arpa=$(in_kaldi_dir "$lm_arpa")
    else
      arpa=data/local/lm/lm.arpa.gz
      mkdir -p data/local/lm
      utils/make_ngram_lm.sh --order=$lm_order --vocab="$lang_dir/words.txt" \
        --oov-symbol="$(cat "$lang_dir/oov.txt")" "$(in_kaldi_dir "$lm_text")" $arpa
    fi
    utils/format_lm.sh "$lang_dir" "$arpa" "$lexicon" data/lang_test
  fi
}

if run_stage 0; then
  banner 0 "check the Kaldi dir $kaldi_dir and copy its data dirs"
  lm_given=false; [ -n "$lm_arpa$lm_text" ] && lm_given=true
  check_kaldi_dir.py --train=$train --test=$test --lang=$lang --ali=$ali --graph=$graph \
    --use-kaldi-feats=$use_kaldi_feats --lm-given=$lm_given "$kaldi_dir" > data_check.json.tmp || {
      rm -f data_check.json.tmp; echo "$0: stage 0 failed: the Kaldi dir is not usable" >&2; exit 1; }
  for d in $train $test; do
    utils/validate_data_dir.sh --no-feats "$kaldi_dir/$d" || {
      echo "$0: stage 0 failed: $kaldi_dir/$d is not a valid Kaldi data dir" >&2; exit 1; }
  done
  mkdir -p data
  mv data_check.json.tmp data/kaldi_dir.json
  # each stage records what it was made from (data/stage<N>.json, exp/<name>/stage<N>.json:
  # utils/recipe_lib.sh's stage_begin); one killed midway or made from other options or inputs
  # is redone (only what resumes by itself is kept: a training's state, finished decodes)
  stage_begin data/stage0.json use_kaldi_feats=$use_kaldi_feats lm_arpa=$lm_arpa \
    lm_text=$lm_text oov_word=$oov_word "$kaldi_dir/$train" "$kaldi_dir/$test" \
    $({ [ $gmm == false ] || [ "$lang_dir" == data/lang ]; } && echo "$kaldi_dir/$lang")
  [ $stage_status == done ] || rm -rf data/train data/test
  for x in train test; do
    [ $x == train ] && src=$train || src=$test
    stamp="$kaldi_dir/$src use_kaldi_feats=$use_kaldi_feats"
    if [ -f data/$x/.imported ] && [ "$(cat data/$x/.imported)" == "$stamp" ]; then
      echo "data/$x is already imported from $kaldi_dir/$src: skipping"
      continue
    fi
    import_data_dir.py --keep-feats=$use_kaldi_feats "$kaldi_dir" "$kaldi_dir/$src" data/$x
    echo "$stamp" > data/$x/.imported
  done
  if [ $gmm == false ] || [ "$lang_dir" == data/lang ]; then
    make_lang_dirs
  fi
  stage_finish data/stage0.json
fi
resolve_data_defaults
if run_stage 1; then resolve_feat_config; fi  # (the audio is in data/train and data/test)

# --fmllr true (stage 1): data/train and data/test hold the SAT GMM's fMLLR features (nnet1's
# steps/nnet/make_fmllr_feats.sh), made from the GMM's own features in data/<set>_gmm (the Kaldi
# dir's feats.scp with --use-kaldi-feats true, else MFCC computed with its conf) with --ali's
# cmvn_opts, splice_opts, final.mat and trans.*: --ali's for train, for test those of the first
# decode dir beside --graph covering its speakers (else --ali's when they cover them, else none:
# the unadapted LDA+MLLT features, with a note); fake CMVN stats on them, as nnet1 applies no
# per-speaker CMVN to fMLLR features. data/train_cv10 (stage 2) is a subset of data/train.
make_fmllr_data() {
  local x src tdir cands d
  for x in train test; do
    if [ -s data/$x/feats.scp ] && [ -s data/$x/cmvn.scp ] && [ -f data/$x/fmllr_from ]; then
      echo "data/$x already has fMLLR features ($(cat data/$x/fmllr_from)): skipping"
      continue
    fi
    if [ ! -s data/${x}_gmm/feats.scp ] || [ ! -s data/${x}_gmm/cmvn.scp ]; then
      rm -rf data/${x}_gmm
      [ $x == train ] && src=$train || src=$test
      import_data_dir.py --keep-feats=$use_kaldi_feats "$kaldi_dir" "$kaldi_dir/$src" data/${x}_gmm
      if [ ! -s data/${x}_gmm/feats.scp ]; then
        steps/make_mfcc.sh --nj $nj --cmd "$train_cmd" --mfcc-config "$feat_config" \
          data/${x}_gmm exp/make_mfcc/${x}_gmm mfcc
        steps/compute_cmvn_stats.sh data/${x}_gmm exp/make_mfcc/${x}_gmm mfcc
      fi
    fi
    if [ $x == train ]; then
      tdir=$kaldi_dir/$ali
    else
      cands="$kaldi_dir/$gmm_decode"
      for d in "$kaldi_dir/$(dirname "$graph")"/decode*; do
        [ -d "$d" ] && [ "$d" != "$kaldi_dir/$gmm_decode" ] && cands="$cands $d"
      done
      # shellcheck disable=SC2086
      tdir=$(choose_transform_dir.py data/test_gmm $cands)
      if [ -z "$tdir" ]; then
        tdir=$(choose_transform_dir.py data/test_gmm "$kaldi_dir/$ali" 2>/dev/null)
        if [ -n "$tdir" ]; then
          echo "$0: note: no decode dir beside $graph holds fMLLR transforms of every speaker of" \
            "data/test: using those of $ali (the same speakers' transforms from their training data)"
        else
          echo "$0: note: no fMLLR transforms for the speakers of data/test (in $cands or $ali):" \
            "decoding on the unadapted LDA+MLLT features of $ali (the network is trained on" \
            "adapted ones: expect a worse WER; decode data/test with the SAT GMM first," \
            "steps/decode_fmllr.sh, to get its trans.*)"
        fi
      fi
    fi
    echo "$0: data/$x: fMLLR features (${tdir:-no transforms}) from data/${x}_gmm"
    rm -f data/$x/feats.scp data/$x/cmvn.scp data/$x/utt2num_frames data/$x/fmllr_from
    steps/nnet/make_fmllr_feats.sh --nj $nj --cmd "$train_cmd" ${tdir:+--transform-dir "$tdir"} \
      data/$x data/${x}_gmm "$kaldi_dir/$ali" exp/make_fmllr/$x fmllr
    steps/compute_cmvn_stats.sh --fake true data/$x exp/make_fmllr/$x fmllr
    echo "${tdir:-none}" > data/$x/fmllr_from
  done
}

if run_stage 1; then
  banner 1 "features ($([ $use_kaldi_feats == true ] && echo "the Kaldi dir's" || echo "$feat_type, $feat_config")) and CMVN stats"
  stage_begin data/stage1.json use_kaldi_feats=$use_kaldi_feats feat_type=$feat_type \
    "$feat_config" data/train/wav.scp data/test/wav.scp data/train/utt2spk data/test/utt2spk \
    $([ $fmllr == true ] && echo "fmllr=true $kaldi_dir/$ali $kaldi_dir/$gmm_decode")
  if [ $stage_status != done ] && [ $use_kaldi_feats == false ]; then
    for x in train test; do rm -f data/$x/feats.scp data/$x/cmvn.scp data/$x/utt2num_frames; done
    rm -rf data/train_sp  # (made from data/train's utterances with features, below)
  fi
  [ $stage_status != done ] && rm -rf data/train_gmm data/test_gmm data/train/fmllr_from data/test/fmllr_from
  if [ $fmllr == true ]; then make_fmllr_data; fi
  for x in train test; do
    if [ -s data/$x/feats.scp ] && [ -s data/$x/cmvn.scp ]; then
      echo "data/$x already has feats.scp and cmvn.scp: skipping"
      continue
    fi
    if [ $use_kaldi_feats == true ]; then
      echo "$0: data/$x has no feats.scp/cmvn.scp: run stage 0 again with --use-kaldi-feats true" >&2
      exit 1
    fi
    steps/make_$feat_type.sh --nj $nj --cmd "$train_cmd" --${feat_type}-config "$feat_config" \
      data/$x exp/make_$feat_type/$x $feat_type
    steps/compute_cmvn_stats.sh data/$x exp/make_$feat_type/$x $feat_type
  done
  for x in train test; do
    [ -s data/$x/utt2num_frames ] || utils/data/get_utt2num_frames.sh data/$x
  done
  # finished only when every utterance has features: one whose audio could not be read (the
  # features step skips and counts it) is computed again by the next run, once it is fixed
  missing=
  for x in train test; do
    n=$(wc -l < data/$x/feats.scp); u=$(wc -l < data/$x/utt2spk)
    [ $n -lt $u ] && missing="$missing data/$x: $n of $u;"
  done
  if [ -n "$missing" ] && [ $use_kaldi_feats == false ]; then
    echo "$0: warning: features of only:$missing stage 1 stays unfinished, so the next run" \
      "computes them again (fix the audio named in exp/make_$feat_type/*/*.log, or leave those" \
      "utterances out: utils/fix_data_dir.sh)" >&2
  else
    stage_finish data/stage1.json
  fi
fi

# --- speed perturbation (issue 30): data/train_sp, 3-way, with its features and CMVN --------
if run_stage 1 && [ "$speed_perturb" == true ]; then
  banner 1 "speed perturbation: data/train_sp (data/train at speeds 0.9, 1.0, 1.1) and its features"
  if [ $use_kaldi_feats == true ]; then
    echo "$0: --speed-perturb true needs features computed from the audio (--use-kaldi-feats false)" >&2
    exit 1
  fi
  if [ -s data/train_sp/feats.scp ] && [ -s data/train_sp/cmvn.scp ]; then
    echo "data/train_sp already has feats.scp and cmvn.scp: skipping"
  else
    rm -rf data/train_sp  # (a partial one: the perturbation refuses a dir with feats.scp)
    sp_src=data/train
    n=$(wc -l < data/train/feats.scp); u=$(wc -l < data/train/utt2spk)
    if [ $n -lt $u ]; then  # (audio that could not be read: counted and skipped above)
      echo "$0: data/train_sp: the speeds of the $n utterances of data/train that have features (of $u)"
      rm -rf data/train_with_feats
      utils/subset_data_dir.sh --utt-list <(cut -d' ' -f1 data/train/feats.scp) data/train \
        data/train_with_feats
      sp_src=data/train_with_feats
    fi
    utils/data/perturb_data_dir_speed_3way.sh $sp_src data/train_sp
    steps/make_$feat_type.sh --nj $nj --cmd "$train_cmd" --${feat_type}-config "$feat_config" \
      data/train_sp exp/make_$feat_type/train_sp $feat_type
    steps/compute_cmvn_stats.sh data/train_sp exp/make_$feat_type/train_sp $feat_type
  fi
  [ -s data/train_sp/utt2num_frames ] || utils/data/get_utt2num_frames.sh data/train_sp
fi

# the all-data schedule (given, or chosen where the cv set is too small to judge an epoch)
# trains on every utterance: stage 2 puts the cv set's utterances into data/train_tr90 too
train_all=false
[ "$schedule_config" == conf/schedule_all_data.conf ] && train_all=true
if run_stage 2; then
  if [ $gmm == true ]; then
    stage_begin data/stage2.json ali=$ali "$kaldi_dir/$ali" data/train/feats.scp \
      data/train/utt2spk data/train/text $([ $train_all == true ] && echo train_all=true)
  else  # (the flat start resumes by itself: kept unless made from other inputs)
    stage_begin data/stage2.json flat_objective=$flat_objective flat_rounds=$flat_rounds \
      flat_first_subset=$flat_first_subset num_leaves=$num_leaves \
      "flat_train_opts=$train_opts $flat_train_opts" "${flat_model_config:-$model_config}" \
      "${flat_batching_config:-$batching_config}" "$lang_dir" data/train/feats.scp \
      data/train/utt2spk data/train/text
    [ $stage_status == changed ] && rm -rf exp/flat exp/tri_ali
  fi
  [ $stage_status == done ] || rm -rf exp/ali_train data/train_tr90 data/train_cv10
fi

if run_stage 2 && [ $gmm == false ]; then
  banner 2 "no GMM: flat start into exp/flat ($flat_rounds rounds), CD tree of $num_leaves leaves into exp/tri_ali"
  if [ -s data/train_tr90/feats.scp ] && [ -s data/train_cv10/feats.scp ]; then
    echo "data/train_tr90 and data/train_cv10 exist: skipping"
  else
    utils/subset_data_dir_tr_cv.sh --train-all-if-words-lost=true data/train data/train_tr90 \
      data/train_cv10
  fi
  flat_opts="$train_opts${flat_train_opts:+${train_opts:+ }$flat_train_opts}"
  steps/nnet/train_flatstart.sh --nj $nj --cmd "$train_cmd" --train-cmd "$cuda_cmd" \
    --num-rounds $flat_rounds --first-objective $flat_objective \
    --first-subset $flat_first_subset --device $device --nproc $nproc ${parallel:+--parallel $parallel} \
    --model-config ${flat_model_config:-$model_config} \
    --batching-config ${flat_batching_config:-$batching_config} \
    --schedule-config $schedule_config ${torchrun_opts:+--torchrun-opts "$torchrun_opts"} \
    ${flat_opts:+--train-opts "$flat_opts"} ${align_opts:+--align-opts "$align_opts"} \
    data/train "$lang_dir" exp/flat
  flat_final=exp/flat/$(cat exp/flat/final_nnet_dir)
  if [ -s exp/flat/ali_final/num_jobs ] && [ exp/flat/ali_final/num_jobs -nt $flat_final/final.nnet ]; then
    echo "exp/flat/ali_final is already aligned with $flat_final: skipping"
  else
    # shellcheck disable=SC2086
    steps/nnet/align.sh --nj $nj --cmd "$train_cmd" --device $device $align_opts \
      data/train "$lang_dir" $flat_final exp/flat/ali_final
  fi
  cd_ali=exp/flat/ali_final
  if [ "$num_leaves" -gt 0 ]; then
    cd_ali=exp/tri_ali
    if [ -s exp/tri_ali/num_jobs ] && [ exp/tri_ali/num_jobs -nt exp/flat/ali_final/num_jobs ]; then
      echo "exp/tri_ali already holds the CD tree and alignment: skipping"
    else
      steps/nnet/build_tree.sh --nj $nj --cmd "$train_cmd" $num_leaves data/train "$lang_dir" \
        exp/flat/ali_final exp/tri_ali
    fi
  fi
  if [ -s exp/ali_train/targets.scp ] && [ exp/ali_train/targets.scp -nt $cd_ali/num_jobs ]; then
    echo "exp/ali_train already holds the imported alignments of $cd_ali: skipping"
  else
    rm -rf exp/ali_train
    steps/import_ali.sh $cd_ali data/train exp/ali_train
  fi
  stage_finish data/stage2.json
fi

if run_stage 2 && [ $gmm == true ]; then
  banner 2 "import the alignments of $kaldi_dir/$ali; train/cv split (by speaker, else by utterance)"
  if [ -s exp/ali_train/targets.scp ]; then
    echo "exp/ali_train already holds the imported alignments: skipping"
  else
    steps/import_ali.sh --lang "$lang_dir" "$kaldi_dir/$ali" data/train exp/ali_train
  fi
  if [ -s data/train_tr90/feats.scp ] && [ -s data/train_cv10/feats.scp ]; then
    echo "data/train_tr90 and data/train_cv10 exist: skipping"
  else
    # (the all-data schedule trains on every utterance: the cv set, too small to judge an
    # epoch, is for the log only; hybridasr/recipe/data_defaults.py)
    utils/subset_data_dir_tr_cv.sh --train-all-if-words-lost=true --train-all=$train_all \
      data/train data/train_tr90 data/train_cv10
  fi
  stage_finish data/stage2.json
fi

# --- speed perturbation (issue 30): targets of data/train_sp, its share of the tr/cv split ---
if run_stage 2 && [ "$speed_perturb" == true ]; then
  banner 2 "speed perturbation: targets of data/train_sp (exp/ali_train_sp), data/train_sp_tr90"
  if [ -s exp/ali_train_sp/targets.scp ] && [ exp/ali_train_sp/targets.scp -nt exp/ali_train/targets.scp ] \
      && [ exp/ali_train_sp/targets.scp -nt data/train_sp/feats.scp ]; then
    echo "exp/ali_train_sp already holds the targets of data/train_sp: skipping"
  else
    steps/perturb_ali.sh exp/ali_train data/train_sp exp/ali_train_sp
  fi
  if [ -s data/train_sp_tr90/feats.scp ] && [ data/train_sp_tr90/feats.scp -nt data/train_tr90/utt2spk ] \
      && [ data/train_sp_tr90/feats.scp -nt data/train_sp/feats.scp ]; then
    echo "data/train_sp_tr90 exists: skipping"
  else
    # the copies (utt2uniq: copy -> its source) of the utterances of data/train_tr90 only: no
    # speed of a cv utterance is trained on
    awk 'NR == FNR { tr[$1] = 1; next } ($2 in tr) { print $1 }' data/train_tr90/utt2spk \
      data/train_sp/utt2uniq > data/train_sp/tr90_utts
    utils/subset_data_dir.sh --utt-list data/train_sp/tr90_utts data/train_sp data/train_sp_tr90
    echo "data/train_sp_tr90: $(wc -l < data/train_sp_tr90/utt2spk) utterances (the 3 speeds of" \
      "$(wc -l < data/train_tr90/utt2spk)); cv: data/train_cv10, unperturbed"
  fi
fi

if run_stage 3; then
  banner 3 "train $dir ($model_config, $batching_config, $schedule_config, $device x $nproc)"
  train_restart=false
  # (changed schedule options are notes: a resumed training applies them by itself)
  stage_begin $dir/stage3.json --note=schedule_config=$schedule_config \
    "--note=train_opts=$train_opts" "$model_config" "$batching_config" "$lang_dir/phones.txt" \
    data/train_tr90/feats.scp data/train_cv10/feats.scp exp/ali_train \
    $([ "$speed_perturb" == true ] && echo data/train_sp_tr90/feats.scp exp/ali_train_sp)
  if [ $stage_status == changed ] && [ -e $dir/train_state.json ]; then
    echo "$dir was trained from other inputs (above): training again from scratch"
    rm -f $dir/final.nnet; train_restart=true
  fi
  if [ -e $dir/final.nnet ]; then
    echo "$dir/final.nnet exists: skipping (delete it to train again)"
  else
    if [ -f $dir/train_state.json ] && [ "$(json_get.py $dir/train_state.json done)" == true ]; then
      echo "$dir/final.nnet was deleted after a finished training: training again from scratch"
      train_restart=true
    fi
    opts=$train_opts
    # on a flat-started alignment the cv loss of a tiny dir (one cv utterance) is too noisy to
    # reject the first epoch of a new network on: it is kept (--train-opts can say otherwise)
    [ $gmm == false ] && opts="--keep-lr-iters=1${opts:+ $opts}"
    tr_data=data/train_tr90; tr_ali=exp/ali_train
    [ "$speed_perturb" == true ] && tr_data=data/train_sp_tr90 && tr_ali=exp/ali_train_sp
    steps/nnet/train.sh --cmd "$cuda_cmd" --device $device --nproc $nproc \
      ${parallel:+--parallel $parallel} --restart $train_restart \
      --model-config $model_config --batching-config $batching_config \
      --schedule-config $schedule_config ${torchrun_opts:+--torchrun-opts "$torchrun_opts"} \
      ${opts:+--train-opts "$opts"} $tr_data data/train_cv10 \
      "$lang_dir" $tr_ali exp/ali_train $dir
  fi
  # the data-size choices and their reasons, beside the values training saved (train.conf)
  [ -f data/defaults.json ] && cp data/defaults.json $dir/data_defaults.json
  stage_finish $dir/stage3.json
fi

# --- CTC (issue 29): units of data/train_tr90, the network, its TLG graph -----------------
ctc_dir=${dir}_ctc
if run_stage 3 && [ $ctc == true ]; then
  banner 3 "CTC: units of data/train_tr90 into exp/ctc_units, train $ctc_dir ($ctc_model_config, $ctc_train_config)"
  if [ -s exp/ctc_units/targets.scp ] && [ exp/ctc_units/targets.scp -nt data/train_tr90/text ]; then
    echo "exp/ctc_units is already made: skipping"
  else
    steps/nnet/train_units.sh --units-config $ctc_units_config --lang "$lang_test" \
      data/train_tr90 exp/ctc_units
  fi
  if [ -e $ctc_dir/final.nnet ]; then
    echo "$ctc_dir/final.nnet exists: skipping (delete it to train again)"
  else
    ctc_restart=false
    [ -f $ctc_dir/train_state.json ] && [ "$(json_get.py $ctc_dir/train_state.json done)" == true ] \
      && ctc_restart=true
    steps/nnet/train_ctc.sh --cmd "$cuda_cmd" --device $device --restart $ctc_restart \
      --model-config $ctc_model_config --batching-config $batching_config \
      --schedule-config $schedule_config --train-config $ctc_train_config \
      ${train_opts:+--train-opts "$train_opts"} data/train_tr90 data/train_cv10 exp/ctc_units $ctc_dir
  fi
fi

if run_stage 4; then
  banner 4 "decode $(printf 'data/%s ' $decode_sets)with $graph_dir and score"
  check_decode_sets  # (a bad --decode-sets leaves the stage's record as it was)
  stage_begin $dir/stage4.json "decode_sets=$decode_sets" "decode_opts=$decode_opts" \
    realign_iters=$realign_iters seq_epochs=$seq_epochs ctc=$ctc $dir/final.nnet \
    $([ $gmm == true ] && echo "$graph_dir") $(printf "data/%s/feats.scp " $decode_sets)
  if [ $stage_status != done ]; then  # a WER of a decode or scoring killed midway: made again
    for d in $dir ${dir}_re* ${dir}_smbr ${dir}_mmi ${dir}_ctc exp/flat/nnet*; do
      rm -f $d/decode_*/wer_*
    done
  fi
  if [ $gmm == false ]; then
    # the graphs of the flat-start monophone model and of the recipe's network (its tree)
    for m in exp/flat/mono $dir; do
      g=$m/graph; [ $m == $dir ] && g=$graph_dir
      if [ -s $g/HCLG.fst ] && [ $g/HCLG.fst -nt $m/final.mdl ] && [ $g/HCLG.fst -nt $lang_test/G.fst ]; then
        echo "$g is already made: skipping"
      else
        utils/mkgraph.sh "$lang_test" $m $g
      fi
    done
    decode_and_score exp/flat/$(cat exp/flat/final_nnet_dir) exp/flat/mono/graph
  fi
  decode_and_score $dir
  src=$dir
  gmm_ali=; [ $gmm == true ] && gmm_ali=$kaldi_dir/$ali
  for k in $(seq 1 $realign_iters); do
    banner 4 "realignment round $k of $realign_iters: align with $src, retrain into ${dir}_re$k"
    # align data/train into ${dir}_ali<k>, compare with the GMM's, import, train ${dir}_re<k>
    steps/nnet/realign_round.sh --nj $nj --cmd "$train_cmd" --train-cmd "$cuda_cmd" \
      --device $device --init $realign_init --prior-scale $realign_prior_scale \
      ${align_opts:+--align-opts "$align_opts"} ${gmm_ali:+--gmm-ali "$gmm_ali"} \
      --nproc $nproc ${parallel:+--parallel $parallel} --model-config $model_config \
      --batching-config $batching_config --schedule-config $schedule_config \
      ${torchrun_opts:+--torchrun-opts "$torchrun_opts"} \
      ${train_opts:+--train-opts "$train_opts"} \
      ${realign_train_opts:+--round-train-opts "$realign_train_opts"} \
      data/train data/train_tr90 data/train_cv10 "$lang_dir" $src ${dir}_ali$k ${dir}_re$k
    decode_and_score ${dir}_re$k
    src=${dir}_re$k
  done
  if [ "$(seq_epochs_now)" -gt 0 ]; then
    seq_dir=${dir}_$seq_criterion
    banner 4 "sequence training ($seq_criterion, $(seq_epochs_now) epochs) of $src into $seq_dir"
    # the numerator: the model's alignment of the transcripts; the denominator: its lattices;
    # both of the data CE trained on (the speed copies too, as Kaldi's nnet3 discriminative
    # recipes do), the cv set's utterances among them
    seq_all=data/train seq_tr=data/train_tr90
    [ "$speed_perturb" == true ] && seq_all=data/train_sp seq_tr=data/train_sp_tr90
    if [ -f ${dir}_ali/ali.1.gz ] && [ ${dir}_ali/ali.1.gz -nt $src/final.nnet ] && \
        [ "$(cat ${dir}_ali/data_dir 2>/dev/null)" == $seq_all ]; then
      echo "${dir}_ali is already made with $src of $seq_all: skipping"
    else
      rm -rf ${dir}_ali
      steps/nnet/align.sh --nj $nj --cmd "$train_cmd" --device $device $align_opts \
        $seq_all "$lang_dir" $src ${dir}_ali
      echo $seq_all > ${dir}_ali/data_dir
    fi
    # (lattices of other data are removed; a killed run's own are resumed job by job)
    [ "$(cat ${dir}_denlats/data_dir 2>/dev/null)" == $seq_all ] || rm -rf ${dir}_denlats
    mkdir -p ${dir}_denlats && echo $seq_all > ${dir}_denlats/data_dir
    steps/nnet/make_denlats.sh --nj $nj --cmd "$train_cmd" --device $device \
      $seq_all "$lang_dir" $src ${dir}_denlats
    # (trained with other options, or from another model or one trained since: trained again;
    # a killed training with the same ones goes on)
    seq_made_by="$src $seq_tr epochs=$(seq_epochs_now) frame_smoothing=$seq_frame_smoothing $seq_opts"
    if [ "$(cat $seq_dir/made_by 2>/dev/null)" != "$seq_made_by" ] || \
        [ $src/final.nnet -nt $seq_dir/made_by ]; then
      [ -e $seq_dir ] && echo "$seq_dir was trained with other options: training it again"
      rm -rf $seq_dir
    fi
    if [ -e $seq_dir/final.nnet ] && [ "$(json_get.py $seq_dir/train_state.json done)" == true ]; then
      echo "$seq_dir is already trained: skipping"
    else
      mkdir -p $seq_dir && echo "$seq_made_by" > $seq_dir/made_by
      do_smbr=true; [ $seq_criterion == mmi ] && do_smbr=false
      # shellcheck disable=SC2086
      steps/nnet/train_mpe.sh --cmd "$cuda_cmd" --device $device --num-iters $(seq_epochs_now) \
        --do-smbr $do_smbr --frame-smoothing $seq_frame_smoothing --cv-data data/train_cv10 \
        $seq_opts $seq_tr "$lang_dir" $src ${dir}_ali ${dir}_denlats $seq_dir
    fi
    decode_and_score $seq_dir
  fi
fi

# --- CTC (issue 29): after the hybrid decoding; TLG route, greedy and prefix beam ------------
if run_stage 4 && [ $ctc == true ]; then
  banner 4 "CTC: TLG of exp/ctc_units and $lang_test; decode $(printf 'data/%s ' $decode_sets)with and without it"
  if [ -s $ctc_dir/graph/TLG.fst ] && [ $ctc_dir/graph/TLG.fst -nt exp/ctc_units/units.model ] \
      && [ $ctc_dir/graph/TLG.fst -nt "$lang_test/G.fst" ]; then
    echo "$ctc_dir/graph is already made: skipping"
  else
    make_ctc_graph.py exp/ctc_units "$lang_test" $ctc_dir/graph
  fi
  # shellcheck disable=SC2086
  decode_and_score $ctc_dir $ctc_dir/graph --class-frame-counts none --output-rate model \
    --acwt $ctc_acwt $ctc_decode_opts --scoring-opts "$ctc_scoring_opts"
  for x in $decode_sets; do
    spk=$(wc -l < data/$x/spk2utt); ctc_nj=$(( nj < spk ? nj : spk ))
    for b in 0 $ctc_beam_size; do
      name=greedy; [ $b -gt 0 ] && name=beam$b
      [ -s $ctc_dir/decode_${x}_$name/wer_$name ] && \
        [ $ctc_dir/decode_${x}_$name/wer_$name -nt $ctc_dir/final.nnet ] && \
        [ "$(scored_normalized $ctc_dir/decode_${x}_$name)" == $ref_normalize ] && continue
      # (the units spell $lang_test's words: train_units.sh --lang)
      steps/nnet/decode_ctc_units.sh --nj $ctc_nj --cmd "$decode_cmd" --device $device \
        --beam-size $b --words "$lang_test/words.txt" --ref-normalize $ref_normalize \
        exp/ctc_units data/$x $ctc_dir/decode_${x}_$name
    done
  done
fi

if run_stage 4; then
  stage_finish $dir/stage4.json
fi

# (stage 5 has no record: it sums up what is there, every time)
if run_stage 5; then
  banner 5 "summary"
  # the first of --decode-sets is the one set beside the GMM system's decode
  gmm_decode_opt=(--gmm-decode-dir "$kaldi_dir/$gmm_decode")
  if [ $gmm == true ] && [ $ref_normalize == true ]; then
    # the GMM's own lattices scored as the networks' are, over the LM weights Kaldi scored
    x=${decode_sets%% *}; g=exp/gmm_decode_$x
    if ls "$kaldi_dir/$gmm_decode"/lat.*.gz >/dev/null 2>&1; then
      if ls $g/wer_* >/dev/null 2>&1 && [ "$(scored_normalized $g)" == true ]; then
        echo "$g is already scored: skipping"
      else
        lmwts=$(ls "$kaldi_dir/$gmm_decode" | sed -nE 's:^wer_([0-9]+)$:\1:p' | sort -n)
        range=()  # Kaldi's range where its wer_LMWT files show it, else score.sh's
        [ -n "$lmwts" ] && range=(--min-lmwt $(echo "$lmwts" | head -n 1) --max-lmwt $(echo "$lmwts" | tail -n 1))
        mkdir -p $g
        for f in "$kaldi_dir/$gmm_decode"/lat.*.gz; do ln -sfn "$(readlink -f "$f")" $g/; done
        steps/score.sh --ref-normalize true ${range[@]+"${range[@]}"} data/$x "$kaldi_dir/$graph" $g
      fi
      gmm_decode_opt=(--gmm-decode-dir $g)
    else
      echo "$0: warning: $kaldi_dir/$gmm_decode has no lattices: the GMM's WER beside the network's is Kaldi's, against the reference as given" >&2
    fi
  fi
  model_name="network on the alignments of $kaldi_dir/$ali"
  if [ $gmm == false ]; then
    gmm_decode_opt=()
    flat_final=exp/flat/$(cat exp/flat/final_nnet_dir)
    recipe_summary.py --model-name "flat-start monophone network (round $flat_rounds of $flat_rounds)" \
      $flat_final $(printf "$flat_final/decode_%s " $decode_sets) | tee $flat_final/summary.txt
    model_name="context-dependent network (exp/tri_ali: $(cat exp/ali_train/num_pdfs) pdfs)"
    [ "$num_leaves" -gt 0 ] || model_name="monophone network on $flat_final's alignment"
  fi
  recipe_summary.py ${gmm_decode_opt[@]+"${gmm_decode_opt[@]}"} --model-name "$model_name" \
    $dir $(printf "$dir/decode_%s " $decode_sets) | tee $dir/summary.txt
  for k in $(seq 1 $realign_iters); do
    [ $gmm == true ] && echo "realignment round $k: ${dir}_ali$k against the GMM's: $(json_get.py ${dir}_ali$k/compare_gmm.json \
      phone_agreement | tr -d '\n')% of frames on the same phone"
    recipe_summary.py ${gmm_decode_opt[@]+"${gmm_decode_opt[@]}"} \
      --model-name "$model_name, realignment round $k" ${dir}_re$k \
      $(printf "${dir}_re$k/decode_%s " $decode_sets) \
      | tee ${dir}_re$k/summary.txt
  done
  seq_dir=${dir}_$seq_criterion
  if [ "$(seq_epochs_now)" -gt 0 ] && [ -e $seq_dir/final.nnet ]; then
    recipe_summary.py ${gmm_decode_opt[@]+"${gmm_decode_opt[@]}"} \
      --model-name "$model_name, then $(seq_epochs_now) epochs of $seq_criterion training" $seq_dir \
      $(printf "$seq_dir/decode_%s " $decode_sets) | tee $seq_dir/summary.txt
  fi
fi
# --- CTC (issue 29): its summary, and the best WERs side by side -----------------------------
if run_stage 5 && [ $ctc == true ]; then
  recipe_summary.py --label "CTC model" --model-name "CTC network over the units of exp/ctc_units ($(cat exp/ctc_units/num_outputs) outputs), TLG decoding" \
    $ctc_dir $(printf "$ctc_dir/decode_%s " $decode_sets) | tee $ctc_dir/summary.txt
  echo "best WERs side by side (hybrid $dir | CTC through TLG | CTC greedy | CTC prefix beam $ctc_beam_size):"
  for x in $decode_sets; do
    echo "  $x: $(best_wer_of $dir/decode_$x) | $(best_wer_of $ctc_dir/decode_$x) |" \
      "$(best_wer_of $ctc_dir/decode_${x}_greedy) | $(best_wer_of $ctc_dir/decode_${x}_beam$ctc_beam_size)"
  done | tee -a $ctc_dir/summary.txt
fi
echo "$0: done in $(( $(date +%s) - start_time )) s"
