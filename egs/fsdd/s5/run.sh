#!/usr/bin/env bash
# hybridasr recipe from raw recordings alone: connected digits made from the Free Spoken Digit
# Dataset (FSDD), a GMM-free (flat-start) hybrid BLSTM/HMM system with its own lexicon, lang
# dir, LM and decoding graphs. No Kaldi dir and no Kaldi binary is needed. Everything is written
# under this recipe's data/, exp/, mfcc/.
#
# Stages:
#   0  corpus: local/make_corpus.py concatenates 1-7 same-speaker recordings with 50-300 ms
#      noise pauses into data/wav/; Kaldi data dirs data/train (4 speakers), data/test (the 2
#      held-out speakers), and with --speed-factors data/train_sp (data/train and its
#      speed-perturbed copies, for the context-dependent network)
#   1  dict dir (local/prepare_dict.sh: ARPAbet lexicon of the ten digits), data/lang
#      (utils/prepare_lang.sh), a bigram LM on the training transcripts
#      (utils/make_ngram_lm.sh) and data/lang_test with G.fst (utils/format_lm.sh)
#   2  MFCC + CMVN stats for train, test (and train_sp); train/cv split by utterance
#      (data/train_tr90, data/train_cv10; data/train_sp_tr90 and _cv10 follow it)
#   3  flat start (steps/nnet/train_flatstart.sh): monophone tree and transition model, equal
#      alignment, first network, --num-rounds realign-and-retrain rounds -> exp/flat/nnet<R>
#   4  context-dependent system: align data/train (data/train_sp with --speed-factors) with
#      the last flat-start network (exp/flat/ali_final), a tree of --num-leaves leaves on it (steps/nnet/build_tree.sh ->
#      exp/tri_ali), import, train exp/blstm_cd
#   5  graphs (utils/mkgraph.sh: exp/flat/mono/graph, exp/blstm_cd/graph), decode --decode-sets
#      with the flat-start network and the CD network, score
#   6  summary: best WER of each model on each set; stage times (exp/stage_times.txt)
set -euo pipefail

# Begin configuration section.
stage=0
stop_stage=6
recordings=          # FSDD's recordings/ (default: ../shared/data/fsdd/recordings beside the
                     # hybridasr checkout)
# FSDD came in two batches: jackson nicolas theo yweweler, whose recordings were trimmed hard
# (weak onsets such as the /f/ of "four" are mostly cut off), then george and lucas, trimmed
# lightly (the /f/ is there; lucas keeps 0.1-0.2 s of silence). Each split gets speakers of
# both batches; with george and lucas both held out the test set is of a kind that training
# never saw (RESULTS has that split too).
train_speakers="jackson nicolas theo george"
test_speakers="yweweler lucas"
corpus_seed=777
corpus_opts=         # more local/make_corpus.py options, e.g. "--max-per-speaker 20"
speed_factors="0.9 1.1"  # speed perturbation of the CD network's training data (data/train_sp:
                     # data/train and a copy at each factor); empty: none
lm_order=2           # n-gram order of the digit LM
nj=2                 # parallel jobs (features, alignment, decoding)
num_rounds=2         # flat start: realign-and-retrain rounds after the first network
num_leaves=300       # leaves of the context-dependent tree (RESULTS: 300 -> 224 pdfs beat 150)
model_config=conf/model.conf
batching_config=conf/batching.conf
schedule_config=conf/schedule.conf
train_opts="--norm-vars=true"  # train.py options of every network (per-speaker mean and
                     # variance normalisation)
flat_train_opts=     # more train.py options for the flat-start networks
cd_train_opts="--dropout=0.3 --config=conf/spec_augment.conf"  # more train.py options for
                     # the context-dependent network: more dropout than conf/model.conf's 0.1
                     # and SpecAugment masks (RESULTS: both help on the held-out speakers)
device=cpu           # cpu|cuda|auto (training, alignment and decoding)
decode_opts=         # more options for steps/nnet/decode.sh
scoring_opts="--min-lmwt 1 --max-lmwt 10"  # steps/score.sh's LM-weight sweep (its default
                     # 4..15 had its best at 4, its edge, with a cross-entropy flat start)
decode_sets="test train_cv10"  # data/<set> decoded by each model into <model>/decode_<set>
# CTC beside the hybrid network (issue 29; as egs/digits/s5): units of data/train_tr90's text
ctc=false            # true: also train exp/blstm_ctc (stage 4), decode it (stage 5) with the TLG
                     # graph of its units and data/lang_test, and by greedy and prefix beam search
ctc_units_config=conf/ctc/units.conf  # the units (steps/nnet/train_units.sh)
ctc_model_config=conf/ctc/model.conf  # the CTC network
ctc_train_config=conf/ctc/train.conf  # its train.py options (frame stacking, subsampling)
ctc_acwt=1.0         # acoustic scale of the TLG decoding (no priors, the network's own frames)
ctc_decode_opts="--lattice-beam 5"  # more steps/nnet/decode.sh options of the TLG decoding
ctc_scoring_opts="--min-lmwt 1 --max-lmwt 5"  # LM weights of the TLG route's scoring
ctc_beam_size=8      # prefix beam search of the route without a graph (besides greedy)
restart=false        # true: remove data/ exp/ mfcc/ of an earlier run first (needed when the
                     # corpus options differ from the run that made them)
# End configuration section.

help_message="Usage: $0 [options]
 e.g.: $0 --stage 3 --num-rounds 3 --num-leaves 200
Stages: 0 corpus, 1 dict+lang+LM, 2 features+cv split, 3 flat start, 4 CD tree+network,
        5 graphs+decode+score, 6 summary
Options (default):
  --stage N / --stop-stage M   # run stages N..M ($stage..$stop_stage)
  --recordings DIR             # FSDD recordings (../shared/data/fsdd/recordings)
  --train-speakers, --test-speakers \"A B ...\"  # (\"$train_speakers\"; \"$test_speakers\")
  --corpus-seed N              # seed of the corpus ($corpus_seed)
  --corpus-opts \"...\"          # more local/make_corpus.py options (\"$corpus_opts\")
  --speed-factors \"F ...\"      # speed perturbation of the CD network's data (\"$speed_factors\")
  --lm-order N                 # n-gram order of the LM ($lm_order)
  --nj N                       # parallel jobs ($nj)
  --num-rounds R               # flat-start realignment rounds ($num_rounds)
  --num-leaves N               # leaves of the CD tree ($num_leaves)
  --model-config, --batching-config, --schedule-config  # ($model_config, $batching_config, $schedule_config)
  --train-opts \"...\"           # train.py options of every network (\"$train_opts\")
  --flat-train-opts, --cd-train-opts \"...\"  # more train.py options, flat start / CD
  --device cpu|cuda|auto       # ($device)
  --decode-opts \"...\"          # more steps/nnet/decode.sh options
  --scoring-opts \"...\"         # steps/score.sh options (\"$scoring_opts\")
  --decode-sets \"X Y\"          # data sets each model decodes (\"$decode_sets\")
  --ctc true|false             # also a CTC network, exp/blstm_ctc ($ctc; conf/ctc/*.conf)
  --restart true               # remove data/ exp/ mfcc/ of an earlier run first (a run with
                               # other corpus options than the one that made them is refused)"

echo "$0 $@"
cmdline="$0 $*"
cd "$(dirname "$0")"
. utils/recipe_lib.sh  # (shared with egs/kaldi_dir/s5: the lock, checks, banner, run_stage)
recipe_lock "$cmdline"  # one run at a time in a recipe dir
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 0 ]; then
  echo "$help_message" >&2
  exit 1
fi
check_stage_options 6  # --stage, --stop-stage, --nj, before any stage runs

[ -z "$recordings" ] && recordings=$HYBRIDASR_ROOT/../shared/data/fsdd/recordings
if [ $stage -le 0 ] && [ ! -d "$recordings" ]; then
  echo "$0: --recordings $recordings does not exist (FSDD's recordings/ dir)" >&2
  exit 1
fi

# what data/ and exp/ are made from: a run with another corpus is refused, naming --restart
inputs="recordings=$(cd "$recordings" 2>/dev/null && pwd -P || echo "$recordings")"
inputs="$inputs train_speakers=${train_speakers// /,} test_speakers=${test_speakers// /,}"
inputs="$inputs corpus_seed=$corpus_seed speed_factors=${speed_factors// /,}"
inputs="$inputs corpus_opts=${corpus_opts// /,}"
check_recipe_inputs "$inputs" "$restart" data exp mfcc

# the data sets with features, and the CD network's training data
sets="train test"; cd_data=data/train
[ -n "$speed_factors" ] && sets="train test train_sp" && cd_data=data/train_sp

start_time=$(date +%s)
mkdir -p exp
# stage_done <n> <name> <start>: logs the stage's wall time to exp/stage_times.txt
stage_done() {
  local s=$(( $(date +%s) - $3 ))
  echo "stage $1 ($2): $s s"
  echo "$(date '+%F %T') stage $1 $2 $s s" >> exp/stage_times.txt
}

# decode_and_score <nnet-dir> <graph-dir>: each of --decode-sets into <nnet-dir>/decode_<set>,
# unless already scored after the network was trained
decode_and_score() {
  local d=$1 graph=$2 x newest_wer spk decode_nj
  for x in $decode_sets; do
    if [ ! -s data/$x/feats.scp ]; then
      echo "$0: --decode-sets names data/$x, which has no feats.scp" >&2
      exit 1
    fi
    newest_wer=$(ls -t $d/decode_$x/wer_* 2>/dev/null | head -n 1 || true)
    if [ -n "$newest_wer" ] && [ "$newest_wer" -nt $d/final.nnet ] && [ "$newest_wer" -nt $graph/HCLG.fst ]; then
      echo "$d/decode_$x is already scored: skipping"
      continue
    fi
    spk=$(wc -l < data/$x/spk2utt); decode_nj=$(( nj < spk ? nj : spk ))
    steps/nnet/decode.sh --nj $decode_nj --cmd "$decode_cmd" --device $device $decode_opts \
      --scoring-opts "$scoring_opts" \
      $graph data/$x $d/decode_$x
  done
}

if run_stage 0; then
  banner 0 "connected-digit corpus from $recordings"
  t0=$(date +%s)
  stamp="seed=$corpus_seed train=$train_speakers test=$test_speakers speed=$speed_factors opts=$corpus_opts"
  if [ -f data/.corpus ] && [ "$(cat data/.corpus)" == "$stamp" ] && \
     [ -s data/train/text ] && [ -s data/test/text ]; then
    echo "data/train and data/test already hold the corpus ($stamp): skipping"
  else
    if [ -f data/.corpus ]; then
      echo "$0: data/ holds a corpus made with other options ($(cat data/.corpus)); run with" \
           "--restart true to make a new one (it removes data/ exp/ mfcc/)" >&2
      exit 1
    fi
    # shellcheck disable=SC2086
    local/make_corpus.py --seed $corpus_seed --train-speakers "$train_speakers" \
      --test-speakers "$test_speakers" --speed-factors "$speed_factors" $corpus_opts \
      "$recordings" data/wav data
    for x in train test $([ -n "$speed_factors" ] && echo train_sp); do
      utils/validate_data_dir.sh --no-feats data/$x
    done
    echo "$stamp" > data/.corpus
  fi
  stage_done 0 corpus $t0
fi

if run_stage 1; then
  banner 1 "dict, data/lang, ${lm_order}-gram LM, data/lang_test"
  t0=$(date +%s)
  if [ -s data/lang/L.fst ] && [ -s data/lang_test/G.fst ] && [ data/lang_test/G.fst -nt data/train/text ]; then
    echo "data/lang and data/lang_test exist: skipping"
  else
    local/prepare_dict.sh data/local/dict
    utils/prepare_lang.sh data/local/dict "<UNK>" data/local/lang_tmp data/lang
    mkdir -p data/local/lm
    utils/make_ngram_lm.sh --order=$lm_order --vocab=data/lang/words.txt --has-utt-ids=true \
      data/train/text data/local/lm/lm.arpa.gz
    utils/format_lm.sh data/lang data/local/lm/lm.arpa.gz data/local/dict/lexicon.txt \
      data/lang_test
  fi
  stage_done 1 lang $t0
fi

if run_stage 2; then
  banner 2 "MFCC and CMVN stats; train/cv split"
  t0=$(date +%s)
  make_feats mfcc conf/mfcc.conf $(printf "data/%s " $sets)
  for x in $sets; do
    [ -s data/$x/utt2num_frames ] || utils/data/get_utt2num_frames.sh data/$x
  done
  split_tr_cv
  if [ -n "$speed_factors" ]; then
    for x in tr90 cv10; do
      if [ -s data/train_sp_$x/feats.scp ] && [ data/train_sp_$x/feats.scp -nt data/train_$x/feats.scp ]; then
        echo "data/train_sp_$x exists: skipping"
      else
        local/perturbed_split.sh data/train_$x data/train_sp data/train_sp_$x
      fi
    done
  fi
  stage_done 2 features $t0
fi

if run_stage 3; then
  banner 3 "flat start: exp/flat ($num_rounds rounds; $model_config, $batching_config, $schedule_config)"
  t0=$(date +%s)
  if [ -f exp/flat/final_nnet_dir ] && [ "$(cat exp/flat/final_nnet_dir)" == nnet$num_rounds ]; then
    echo "exp/flat/nnet$num_rounds is the last flat-start network: skipping"
  else
    steps/nnet/train_flatstart.sh --nj $nj --cmd "$train_cmd" --num-rounds $num_rounds \
      --device $device --model-config $model_config --batching-config $batching_config \
      --schedule-config $schedule_config --train-opts "$train_opts $flat_train_opts" \
      data/train data/lang exp/flat
  fi
  stage_done 3 flatstart $t0
fi

if run_stage 4; then
  banner 4 "context-dependent tree ($num_leaves leaves) and network exp/blstm_cd"
  t0=$(date +%s)
  flat=exp/flat/$(cat exp/flat/final_nnet_dir)
  if [ -s exp/flat/ali_final/num_jobs ] && [ exp/flat/ali_final/num_jobs -nt $flat/final.nnet ] && \
     [ exp/flat/ali_final/num_jobs -nt $cd_data/feats.scp ]; then
    echo "exp/flat/ali_final is already aligned with $flat: skipping"
  else
    steps/nnet/align.sh --nj $nj --cmd "$train_cmd" --device $device \
      $cd_data data/lang $flat exp/flat/ali_final
  fi
  if [ -s exp/tri_ali/num_jobs ] && [ exp/tri_ali/num_jobs -nt exp/flat/ali_final/num_jobs ] && \
     [ "$(cat exp/tri_ali/num_leaves 2>/dev/null)" == "$num_leaves" ]; then
    echo "exp/tri_ali already holds the $num_leaves-leaf tree's alignment: skipping"
  else
    steps/nnet/build_tree.sh --nj $nj --cmd "$train_cmd" $num_leaves \
      $cd_data data/lang exp/flat/ali_final exp/tri_ali
    echo $num_leaves > exp/tri_ali/num_leaves
  fi
  if [ -s exp/tri_ali_targets/targets.scp ] && [ exp/tri_ali_targets/targets.scp -nt exp/tri_ali/num_jobs ]; then
    echo "exp/tri_ali_targets is already imported: skipping"
  else
    steps/import_ali.sh exp/tri_ali $cd_data exp/tri_ali_targets
  fi
  if [ -e exp/blstm_cd/final.nnet ] && [ exp/blstm_cd/final.nnet -nt exp/tri_ali_targets/targets.scp ]; then
    echo "exp/blstm_cd/final.nnet exists: skipping (delete it to train again)"
  else
    steps/nnet/train.sh --cmd "$cuda_cmd" --device $device --restart true \
      --model-config $model_config --batching-config $batching_config \
      --schedule-config $schedule_config --train-opts "$train_opts $cd_train_opts" \
      ${cd_data}_tr90 ${cd_data}_cv10 data/lang exp/tri_ali_targets exp/tri_ali_targets \
      exp/blstm_cd
  fi
  stage_done 4 cd $t0
fi
# --- CTC (issue 29): units and network beside the hybrid one --------------------------------
if run_stage 4 && [ $ctc == true ]; then
  banner 4 "CTC: units of data/train_tr90 into exp/ctc_units, network exp/blstm_ctc"
  t0=$(date +%s)
  if [ -s exp/ctc_units/targets.scp ] && [ exp/ctc_units/targets.scp -nt data/train_tr90/text ]; then
    echo "exp/ctc_units is already made: skipping"
  else
    steps/nnet/train_units.sh --units-config $ctc_units_config --lang data/lang_test \
      data/train_tr90 exp/ctc_units
  fi
  if [ -e exp/blstm_ctc/final.nnet ]; then
    echo "exp/blstm_ctc/final.nnet exists: skipping (delete it to train again)"
  else
    steps/nnet/train_ctc.sh --cmd "$cuda_cmd" --device $device --restart true \
      --model-config $ctc_model_config --batching-config $batching_config \
      --schedule-config $schedule_config --train-config $ctc_train_config \
      --train-opts "$train_opts" data/train_tr90 data/train_cv10 exp/ctc_units exp/blstm_ctc
  fi
  stage_done 4 ctc $t0
fi

if run_stage 5; then
  banner 5 "graphs, decoding of $(printf 'data/%s ' $decode_sets)and scoring"
  t0=$(date +%s)
  flat=exp/flat/$(cat exp/flat/final_nnet_dir)
  make_graph data/lang_test exp/flat/mono exp/flat/mono/graph
  decode_and_score $flat exp/flat/mono/graph
  if [ -e exp/blstm_cd/final.nnet ]; then
    make_graph data/lang_test exp/blstm_cd exp/blstm_cd/graph
    decode_and_score exp/blstm_cd exp/blstm_cd/graph
  else
    echo "$0: no exp/blstm_cd/final.nnet (stage 4): decoding the flat-start network only"
  fi
  stage_done 5 decode $t0
fi
if run_stage 5 && [ $ctc == true ]; then
  banner 5 "CTC: TLG of exp/ctc_units and data/lang_test; decode $(printf 'data/%s ' $decode_sets)with and without it"
  t0=$(date +%s)
  g=exp/blstm_ctc/graph
  if [ -s $g/TLG.fst ] && [ $g/TLG.fst -nt exp/ctc_units/units.model ] && [ $g/TLG.fst -nt data/lang_test/G.fst ]; then
    echo "$g is already made: skipping"
  else
    make_ctc_graph.py exp/ctc_units data/lang_test $g
  fi
  for x in $decode_sets; do
    spk=$(wc -l < data/$x/spk2utt); ctc_nj=$(( nj < spk ? nj : spk ))
    newest_wer=$(ls -t exp/blstm_ctc/decode_$x/wer_* 2>/dev/null | head -n 1 || true)
    if [ -n "$newest_wer" ] && [ "$newest_wer" -nt exp/blstm_ctc/final.nnet ]; then
      echo "exp/blstm_ctc/decode_$x is already scored: skipping"
    else
      steps/nnet/decode.sh --nj $ctc_nj --cmd "$decode_cmd" --device $device \
        --class-frame-counts none --output-rate model --acwt $ctc_acwt $ctc_decode_opts \
        --scoring-opts "$ctc_scoring_opts" $g data/$x exp/blstm_ctc/decode_$x
    fi
    for b in 0 $ctc_beam_size; do
      name=greedy; [ $b -gt 0 ] && name=beam$b
      [ -s exp/blstm_ctc/decode_${x}_$name/wer_$name ] && \
        [ exp/blstm_ctc/decode_${x}_$name/wer_$name -nt exp/blstm_ctc/final.nnet ] && continue
      steps/nnet/decode_ctc_units.sh --nj $ctc_nj --cmd "$decode_cmd" --device $device \
        --beam-size $b exp/ctc_units data/$x exp/blstm_ctc/decode_${x}_$name
    done
  done
  stage_done 5 ctc $t0
fi

if run_stage 6; then
  banner 6 "summary"
  flat=exp/flat/$(cat exp/flat/final_nnet_dir)
  for d in $flat exp/blstm_cd; do
    [ -e $d/final.nnet ] || continue
    for x in $decode_sets; do
      echo "$d data/$x: $(grep -H WER $d/decode_$x/wer_* 2>/dev/null | utils/best_wer.sh)"
    done
    recipe_summary.py $d $(printf "$d/decode_%s " $decode_sets) > $d/summary.txt || true
  done | tee exp/summary.txt
  if [ $ctc == true ] && [ -e exp/blstm_ctc/final.nnet ]; then
    echo "best WERs side by side (hybrid exp/blstm_cd | CTC through TLG | CTC greedy | CTC prefix beam $ctc_beam_size):"
    for x in $decode_sets; do
      echo "  $x: $(best_wer_of exp/blstm_cd/decode_$x) | $(best_wer_of exp/blstm_ctc/decode_$x) |" \
        "$(best_wer_of exp/blstm_ctc/decode_${x}_greedy) | $(best_wer_of exp/blstm_ctc/decode_${x}_beam$ctc_beam_size)"
    done | tee exp/blstm_ctc/summary.txt
  fi
  [ -f exp/stage_times.txt ] && { echo "stage times (exp/stage_times.txt):"; cat exp/stage_times.txt; }
fi
echo "$0: done in $(( $(date +%s) - start_time )) s"
