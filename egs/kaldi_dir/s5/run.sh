#!/usr/bin/env bash
# The any-Kaldi-dir recipe: a hybrid BLSTM/HMM acoustic model on top of an existing Kaldi s5 dir
# (--kaldi-dir, only read); everything is written under the recipe dir's data/ exp/ mfcc/ fbank/.
# Optional systems, each a script of its own (run alone too): local/run_realign.sh,
# local/run_sequence.sh, local/run_ctc.sh, local/chain/run_tdnn.sh. Corpus recipes:
# egs/digits/s5/run.sh. docs/design.md.
# Stages: 0 check the Kaldi dir, copy its data dirs; 1 features; 2 alignments (or a flat start)
# and the train/cv split; 3 train; 4 decode and score; 5 summary. Each skips what is done.
set -euo pipefail

# Begin configuration section.
stage=0
stop_stage=5
kaldi_dir=           # the Kaldi s5 dir (required; egs/digits/s5: ../shared/data/kaldi_digits)
train=data/train     # the names below are inside --kaldi-dir (or absolute)
test=data/test
lang=data/lang       # a lang dir, or a dict dir (data/local/dict) to make data/lang from
ali=exp/mono_ali     # the GMM's alignment dir; none: no GMM, a flat start (stage 2)
graph=exp/mono/graph # with --ali none: made here (exp/<name>/graph, exp/flat/mono/graph)
gmm_decode=          # the GMM system's decode dir to compare with (default: <graph>/../decode)
use_kaldi_feats=false # true: the Kaldi dir's feats.scp/cmvn.scp
feat_type=auto       # mfcc|fbank|auto (auto: from data/train's size, data/defaults.json)
feat_config=         # default: data/<feat-type>.conf at the audio's sample rate (from the Kaldi
                     # dir's conf/<feat-type>.conf, else conf/<feat-type>.conf)
nj=2                 # parallel jobs (features, alignment, decoding: at most one per speaker)
model_config=auto    # auto: by data/train's hours, conf/model/*.conf (the rule: data/defaults.json)
batching_config=auto # auto: with --model-config auto, the rule's (frame shuffling for its MLP), else
                     # conf/batching.conf (whole utterances, as the flat start and CTC always get)
num_models=1         # networks of other seeds averaged in final.nnet (steps/nnet/train.sh --num-models)
schedule_config=auto # auto: conf/schedule.conf (newbob on the cv loss), or conf/schedule_all_data.conf
                     # where the cv set is too small to judge an epoch (training on every utterance)
device=cpu           # cpu|cuda|auto (training and decoding)
nproc=1              # processes (GPUs) for torchrun; >1 uses torch.distributed
parallel=            # with --nproc > 1: ddp (default) | average
train_opts=          # more options for pybin/train.py, e.g. "--amp=bf16 --max-iters=10"
torchrun_opts=       # torchrun's own options, e.g. "--nnodes 2 --rdzv-endpoint host:29400"
decode_opts=         # more options for steps/nnet/decode.sh
gmm_weight=auto      # >0: decoding adds the --ali GMM's log-likelihoods at this weight (auto: 0.5 below 0.5 h, 0.67 there without a cv set)
ref_normalize=false  # true: score against the reference words as alignment reads them (the GMM's too)
exp_name=blstm       # the network's dir: exp/<name>
decode_sets=test     # data/<set>s each model decodes into <exp>/decode_<set>, e.g. "test train_cv10"
restart=false        # true: remove data/ exp/ mfcc/ fbank/ of an earlier run with other inputs first
speed_perturb=auto   # true: train on data/train_tr90 at speeds 0.9, 1.0, 1.1 (local/speed_perturb.sh;
                     # auto: true where a cv set can be held out)
fmllr=auto           # true: the SAT GMM's fMLLR features (local/make_fmllr_data.sh; auto: true
                     # when --ali has trans.*; needs mfcc and no speed perturbation)
# --ali none (local/run_flatstart.sh): the flat start, its tree, lang dir and LM
flat_objective=gmm   # gmm: a monophone GMM (steps/train_mono.sh, Kaldi's) | fullsum | ce: networks
flat_rounds=1        # (their first by full-sum or on the equal alignment, then --flat-rounds rounds)
flat_model_config=   # model and batching confs of the flat-start networks (empty: --model-config,
flat_batching_config= # --batching-config as given; where auto, a BLSTM of the data's size, utterances)
flat_train_opts=     # train.py options of the flat-start networks (after --train-opts)
flat_first_subset=0  # >0: the first flat-start network (the GMM) trains on this many shortest utterances (GMM: 10k at most)
num_leaves=1000      # leaves of the context-dependent tree (0: the monophone alignment)
lm_arpa=             # no G.fst in --lang: an ARPA LM (inside --kaldi-dir or absolute),
lm_text=             # or text to estimate one from (one sentence a line)
lm_order=3           # order of the LM estimated from --lm-text
oov_word=            # the lexicon's OOV entry when --lang is a dict dir (default: <UNK>, ...)
# realignment rounds (local/run_realign.sh)
realign_iters=0      # align-and-retrain rounds after the first model (stage 4)
realign_init=previous # previous: go on training the model that aligned | scratch: a new model
realign_prior_scale=0.5 # prior scale of the rounds' alignment (decoding keeps its own)
realign_train_opts=  # more train.py options for the rounds only (after --train-opts)
align_opts=          # more options for steps/nnet/align.sh (rounds, sequence training, flat start)
# sequence training after CE (local/run_sequence.sh)
seq_epochs=auto      # epochs of --seq-criterion (auto: 4 where data/train_tr90 has at least
seq_min_utts=1000    # $seq_min_utts utterances, else 0); docs/sequence_training.md
seq_criterion=smbr   # smbr | mmi
seq_frame_smoothing=0.3 # weight of frame cross-entropy in the sequence gradient
seq_opts=            # more options for steps/nnet/train_mpe.sh, e.g. "--learn-rate 0.00002"
ctc=false            # CTC beside the hybrid network (local/run_ctc.sh): exp/<name>_ctc, sentencepiece units
ctc_units_config=conf/ctc/units.conf
ctc_model_config=conf/ctc/model.conf
ctc_train_config=conf/ctc/train.conf  # its train.py options (frame stacking, subsampling)
ctc_acwt=1.0         # acoustic scale of the TLG decoding
ctc_decode_opts="--lattice-beam 5"  # more steps/nnet/decode.sh options of the TLG decoding
ctc_scoring_opts="--min-lmwt 1 --max-lmwt 5"  # LM weights of the TLG route's scoring
ctc_beam_size=8      # prefix beam search of the route without a graph (besides greedy)
# the chain (LF-MMI TDNN-F) model beside the hybrid one (local/chain/run_tdnn.sh): exp/chain/tdnn
chain=false          # on the hybrid's lang dir and alignment (GMM's, or --ali none's flat start)
chain_model_config=auto # auto: by data/train's hours, conf/model/tdnnf{_small,}.conf (5 h up: Kaldi's 1k)
chain_opts=          # more local/chain/run_tdnn.sh options, e.g. "--num-leaves 500 --batching-config X"
chain_lats=auto      # its numerator: the lattices of --ali's GMM (Kaldi's), auto: where it is one | false
chain_train_opts=    # its train.py options (after --train-opts)
# End configuration section.

help_message="Usage: $0 [options]   (each option is a variable of the configuration section
 of egs/kaldi_dir/s5/run.sh, with its default and meaning: --name value or --name=value)
 e.g.: $0 --kaldi-dir ~/kaldi/egs/wsj/s5 --train data/train_si284 --ali exp/tri4b_ali_si284 \\
          --graph exp/tri4b/graph_tgpr --test data/test_dev93
Stages: 0 check+copy Kaldi dir, 1 features, 2 alignments+cv split, 3 train, 4 decode+score, 5 summary"

echo "$0 $@"; cmdline="$0 $*"
recipe=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)  # (this script's dir: its local/)
cd "$(dirname "$0")"
localdir=local; [ -x local/run_ctc.sh ] || localdir=$recipe/local
. utils/recipe_lib.sh
recipe_lock "$cmdline"  # one run at a time in a recipe dir
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
[ $# -eq 0 ] || { echo "$help_message" >&2; exit 1; }
check_stage_options 5
resolve_kaldi_dir_options  # --kaldi-dir, --fmllr, $gmm $dir $lang_dir $lang_test $graph_dir
check_recipe_inputs "$(kaldi_dir_recipe_inputs)" "$restart" data exp mfcc fbank
start_time=$(date +%s)
dec=(--nj $nj --device $device --decode-sets "$decode_sets" --ref-normalize $ref_normalize)

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
  # each stage records what it was made from (data/stage<N>.json, exp/<name>/stage<N>.json);
  # one killed midway or made from other options or inputs is redone
  stage_begin data/stage0.json use_kaldi_feats=$use_kaldi_feats lm_arpa=$lm_arpa \
    lm_text=$lm_text oov_word=$oov_word "$kaldi_dir/$train" "$kaldi_dir/$test" \
    $({ [ $gmm == false ] || [ "$lang_dir" == data/lang ]; } && echo "$kaldi_dir/$lang")
  [ $stage_status == done ] || rm -rf data/train data/test
  import_kaldi_data_dir $train data/train; import_kaldi_data_dir $test data/test
  if [ $gmm == false ] || [ "$lang_dir" == data/lang ]; then
    $localdir/make_lang_dirs.sh --oov-word "$oov_word" --lm-order $lm_order --position-dependent-phones \
      "$(json_get.py data/kaldi_dir.json dict_position_dependent_phones)" \
      ${lm_arpa:+--lm-arpa "$(in_kaldi_dir "$lm_arpa")"} ${lm_text:+--lm-text "$(in_kaldi_dir "$lm_text")"} \
      "$kaldi_dir/$lang" $lang_dir $lang_test
  fi
  stage_finish data/stage0.json
fi
resolve_data_defaults; resolve_gmm_fusion  # --feat-type, --speed-perturb, --model-config, ..., --gmm-weight
if run_stage 1; then
  resolve_feat_config  # (from the audio of data/train and data/test)
  banner 1 "features ($([ $use_kaldi_feats == true ] && echo "the Kaldi dir's" || echo "$feat_type, $feat_config")) and CMVN stats"
  stage_begin data/stage1.json use_kaldi_feats=$use_kaldi_feats feat_type=$feat_type \
    "$feat_config" data/train/wav.scp data/test/wav.scp data/train/utt2spk data/test/utt2spk \
    $([ $fmllr == true ] && echo "fmllr=true $kaldi_dir/$ali $kaldi_dir/$gmm_decode")
  if [ $stage_status != done ] && [ $use_kaldi_feats == false ]; then
    for x in train test; do rm -f data/$x/feats.scp data/$x/cmvn.scp data/$x/utt2num_frames; done
    rm -rf data/train_sp  # (made from data/train's utterances with features)
  fi
  [ $stage_status != done ] && rm -rf data/train_gmm data/test_gmm data/train/fmllr_from data/test/fmllr_from data/fmllr_gmm
  if [ $fmllr == true ]; then
    $localdir/make_fmllr_data.sh --nj $nj --use-kaldi-feats $use_kaldi_feats --mfcc-config "$feat_config" \
      "$kaldi_dir" $train $test $ali $graph $gmm_decode
  fi
  make_feats $feat_type "$feat_config" data/train data/test
  for x in train test; do [ -s data/$x/utt2num_frames ] || utils/data/get_utt2num_frames.sh data/$x; done
  resolve_gmm_fusion recheck  # (the GMM of --ali may score these features: its own?)
  missing=$(feats_missing data/train data/test)  # (audio that could not be read: counted, skipped)
  if [ -n "$missing" ] && [ $use_kaldi_feats == false ]; then
    echo "$0: warning: features of only:$missing stage 1 stays unfinished, so the next run" \
      "computes them again (fix the audio named in exp/make_$feat_type/*/*.log, or leave those" \
      "utterances out: utils/fix_data_dir.sh)" >&2
  else
    stage_finish data/stage1.json
  fi
  if [ "$speed_perturb" == true ]; then
    if [ $use_kaldi_feats == true ]; then
      echo "$0: --speed-perturb true needs features computed from the audio (--use-kaldi-feats false)" >&2
      exit 1
    fi
    $localdir/speed_perturb.sh --stop-stage 0 --nj $nj --feat-type $feat_type --feat-config "$feat_config"
  fi
fi

# the all-data schedule trains on every utterance: stage 2 puts the cv set's into data/train_tr90 too
train_all=false; [ "$schedule_config" == conf/schedule_all_data.conf ] && train_all=true
if run_stage 2; then
  if [ $gmm == true ]; then
    stage_begin data/stage2.json ali=$ali "$kaldi_dir/$ali" data/train/feats.scp \
      data/train/utt2spk data/train/text $([ $train_all == true ] && echo train_all=true)
    [ $stage_status == done ] || rm -rf exp/ali_train data/train_tr90 data/train_cv10
    banner 2 "import the alignments of $kaldi_dir/$ali; train/cv split (by speaker, else by utterance)"
    if [ -s exp/ali_train/targets.scp ]; then
      echo "exp/ali_train already holds the imported alignments: skipping"
    else
      steps/import_ali.sh --lang "$lang_dir" "$kaldi_dir/$ali" data/train exp/ali_train
    fi
    split_tr_cv --train-all-if-words-lost=true --train-all=$train_all
  else  # (the flat start resumes by itself: kept unless made from other inputs)
    flat_opts="$train_opts${flat_train_opts:+${train_opts:+ }$flat_train_opts}"
    stage_begin data/stage2.json flat_objective=$flat_objective flat_rounds=$flat_rounds \
      flat_first_subset=$flat_first_subset num_leaves=$num_leaves "flat_train_opts=$train_opts $flat_train_opts" \
      "${flat_model_config:-$model_config}" "${flat_batching_config:-$seq_batching_config}" "$lang_dir" \
      data/train/feats.scp data/train/utt2spk data/train/text
    [ $stage_status == changed ] && rm -rf exp/flat exp/tri_ali
    [ $stage_status == done ] || rm -rf exp/ali_train data/train_tr90 data/train_cv10
    banner 2 "no GMM given: a flat start ($flat_objective) into exp/flat, CD tree of $num_leaves leaves into exp/tri_ali"
    $localdir/run_flatstart.sh --nj $nj --device $device --nproc $nproc --parallel "$parallel" \
      --objective $flat_objective --rounds $flat_rounds --first-subset $flat_first_subset \
      --num-leaves $num_leaves --model-config ${flat_model_config:-$model_config} \
      --batching-config ${flat_batching_config:-$seq_batching_config} --schedule-config $schedule_config \
      --torchrun-opts "$torchrun_opts" --train-opts "$flat_opts" --align-opts "$align_opts" "$lang_dir"
  fi
  stage_finish data/stage2.json
  [ "$speed_perturb" == true ] && $localdir/speed_perturb.sh --stage 1 --nj $nj
fi

resolve_chain_lats; set_chain_args  # (local/chain/run_tdnn.sh's: its numerator's lattices, or none)
if run_stage 3; then
  banner 3 "train $dir ($model_config x $num_models, $batching_config, $schedule_config, $device x $nproc)"
  # (changed schedule options are notes: a resumed training applies them by itself)
  stage_begin $dir/stage3.json --note=schedule_config=$schedule_config \
    "--note=train_opts=$train_opts" "$model_config" "$batching_config" "$lang_dir/phones.txt" \
    data/train_tr90/feats.scp data/train_cv10/feats.scp exp/ali_train num_models=$num_models \
    $([ "$speed_perturb" == true ] && echo data/train_sp_tr90/feats.scp exp/ali_train_sp)
  tr=data/train_tr90; tr_ali=exp/ali_train
  [ "$speed_perturb" == true ] && tr=data/train_sp_tr90 && tr_ali=exp/ali_train_sp
  # (a tiny flat-started dir's cv loss is too noisy to reject the first epoch on: kept)
  opts=$train_opts; [ $gmm == false ] && opts="--keep-lr-iters=1${opts:+ $opts}"
  if needs_training $dir $stage_status; then
    steps/nnet/train.sh --cmd "$cuda_cmd" --device $device --nproc $nproc \
      ${parallel:+--parallel $parallel} --restart $train_restart --num-models $num_models --model-config $model_config \
      --batching-config $batching_config --schedule-config $schedule_config \
      ${torchrun_opts:+--torchrun-opts "$torchrun_opts"} ${opts:+--train-opts "$opts"} \
      $tr data/train_cv10 "$lang_dir" $tr_ali exp/ali_train $dir
  fi
  [ -f data/defaults.json ] && cp data/defaults.json $dir/data_defaults.json  # (beside train.conf)
  stage_finish $dir/stage3.json
  if [ $ctc == true ]; then
    $localdir/run_ctc.sh --stop-stage 0 --device $device --units-config $ctc_units_config \
      --model-config $ctc_model_config --train-config $ctc_train_config --batching-config \
      $seq_batching_config --schedule-config $schedule_config --train-opts "$train_opts" $lang_test ${dir}_ctc
  fi
  if [ $chain == true ]; then  # (make_chain_lat_data: data/train_gmm, its lattices' features)
    make_chain_lat_data; $localdir/chain/run_tdnn.sh --stop-stage 1 "${chain_args[@]}"; fi
fi

last=$dir; [ $realign_iters -gt 0 ] && last=${dir}_re$realign_iters  # (sequence training's start)
gmm_ali=; [ $gmm == true ] && gmm_ali=$kaldi_dir/$ali
realign=(--iters $realign_iters --init $realign_init --prior-scale $realign_prior_scale
  --gmm-ali "$gmm_ali" --align-opts "$align_opts" --model-config $model_config
  --batching-config $batching_config --schedule-config $schedule_config --nproc $nproc
  --parallel "$parallel" --torchrun-opts "$torchrun_opts" --train-opts "$train_opts"
  --round-train-opts "$realign_train_opts" --decode-opts "$decode_opts" "${dec[@]}")
sequence=(--epochs $(seq_epochs_now) --criterion $seq_criterion --frame-smoothing $seq_frame_smoothing
  --seq-opts "$seq_opts" --align-opts "$align_opts" --decode-opts "$decode_opts" "${dec[@]}")
[ "$speed_perturb" == true ] && sequence+=(--data data/train_sp --data-tr data/train_sp_tr90)
ctc_opts=(--acwt $ctc_acwt --decode-opts "$ctc_decode_opts" --scoring-opts "$ctc_scoring_opts"
  --beam-size $ctc_beam_size --hybrid-dir $dir "${dec[@]}")
if run_stage 4; then
  banner 4 "decode $(printf 'data/%s ' $decode_sets)with $graph_dir and score"
  check_decode_sets  # (a bad --decode-sets leaves the stage's record as it was)
  stage_begin $dir/stage4.json "decode_sets=$decode_sets" "decode_opts=$decode_opts" \
    realign_iters=$realign_iters seq_epochs=$seq_epochs ctc=$ctc $dir/final.nnet \
    $([ $gmm == true ] && echo "$graph_dir") $(printf "data/%s/feats.scp " $decode_sets)
  if [ $stage_status != done ]; then  # a WER of a decode or scoring killed midway: made again
    for d in $dir ${dir}_re* ${dir}_smbr ${dir}_mmi ${dir}_ctc exp/chain/tdnn exp/flat/nnet*; do
      rm -f $d/decode_*/wer_*; done
  fi
  [ $gmm == true ] || make_graph $lang_test $dir $graph_dir
  if [ $gmm == false ] && [ -f exp/flat/final_nnet_dir ]; then  # a flat-start network (not the GMM's)
    make_graph $lang_test exp/flat/mono exp/flat/mono/graph
    steps/nnet/decode_sets.sh --nj $nj --cmd "$decode_cmd" --device $device --ref-normalize $ref_normalize \
      --decode-opts "$decode_opts" exp/flat/mono/graph exp/flat/$(cat exp/flat/final_nnet_dir) "$decode_sets"
  fi
  steps/nnet/decode_sets.sh --nj $nj --cmd "$decode_cmd" --device $device --ref-normalize $ref_normalize \
    --decode-opts "$decode_opts" "$graph_dir" $dir "$decode_sets"
  [ $realign_iters -gt 0 ] && $localdir/run_realign.sh --stop-stage 0 "${realign[@]}" "$lang_dir" "$graph_dir" $dir
  [ "$(seq_epochs_now)" -gt 0 ] && $localdir/run_sequence.sh --stop-stage 0 "${sequence[@]}" "$lang_dir" "$graph_dir" $last $dir
  [ $ctc == true ] && $localdir/run_ctc.sh --stage 1 --stop-stage 1 "${ctc_opts[@]}" $lang_test ${dir}_ctc
  [ $chain == true ] && $localdir/chain/run_tdnn.sh --stage 2 --stop-stage 2 "${chain_args[@]}"
  stage_finish $dir/stage4.json
fi

if run_stage 5; then  # (no record: it sums up what is there, every time)
  banner 5 "summary"
  gmm_decode_dir=$kaldi_dir/$gmm_decode  # (beside the first of --decode-sets)
  if [ $gmm == true ] && [ $ref_normalize == true ]; then  # the GMM's lattices scored as the networks'
    x=${decode_sets%% *}
    $localdir/score_gmm_decode.sh "$kaldi_dir/$gmm_decode" "$kaldi_dir/$graph" data/$x exp/gmm_decode_$x
    ls "$kaldi_dir/$gmm_decode"/lat.*.gz >/dev/null 2>&1 && gmm_decode_dir=exp/gmm_decode_$x
  fi
  model_name="network on the alignments of $kaldi_dir/$ali$(awk -v w=$gmm_weight 'BEGIN { if (w > 0) print ", decoded with the log-likelihoods of that GMM added (weight " w ")" }')"
  if [ $gmm == false ]; then
    gmm_decode_dir=
    flat_final=exp/flat/mono  # (the GMM flat start's: not decoded)
    [ -f exp/flat/final_nnet_dir ] && flat_final=exp/flat/$(cat exp/flat/final_nnet_dir) && recipe_summary.py \
      --model-name "flat-start monophone network (round $flat_rounds of $flat_rounds)" \
      $flat_final $(printf "$flat_final/decode_%s " $decode_sets) | tee $flat_final/summary.txt
    model_name="context-dependent network (exp/tri_ali: $(cat exp/ali_train/num_pdfs) pdfs)"
    [ "$num_leaves" -gt 0 ] || model_name="monophone network on $flat_final's alignment"
  fi
  recipe_summary.py ${gmm_decode_dir:+--gmm-decode-dir "$gmm_decode_dir"} --model-name "$model_name" \
    $dir $(printf "$dir/decode_%s " $decode_sets) | tee $dir/summary.txt
  summary=(--stage 1 --model-name "$model_name" --gmm-decode-dir "$gmm_decode_dir")
  [ $realign_iters -gt 0 ] && $localdir/run_realign.sh "${summary[@]}" "${realign[@]}" "$lang_dir" "$graph_dir" $dir
  [ "$(seq_epochs_now)" -gt 0 ] && $localdir/run_sequence.sh "${summary[@]}" "${sequence[@]}" "$lang_dir" "$graph_dir" $last $dir
  [ $ctc == true ] && $localdir/run_ctc.sh --stage 2 "${ctc_opts[@]}" $lang_test ${dir}_ctc
  [ $chain == true ] && $localdir/chain/run_tdnn.sh --stage 3 --hybrid-dir $dir \
    --gmm-decode-dir "$gmm_decode_dir" "${chain_args[@]}"
fi
echo "$0: done in $(( $(date +%s) - start_time )) s"
