#!/usr/bin/env bash
# A CTC network beside the hybrid one (run.sh's --ctc true): sentencepiece units of
# data/train_tr90's text that spell <lang-dir>'s words (exp/ctc_units; steps/nnet/train_units.sh),
# the network <exp-dir> (steps/nnet/train_ctc.sh; cv: data/train_cv10), its TLG graph
# (make_ctc_graph.py), and decoding with it, and without one by greedy and prefix beam search
# (steps/nnet/decode_ctc_units.sh). Each part is skipped when done.
# Stages: 0 units and network; 1 graph, decoding, scoring; 2 summary.

# Begin configuration section.
stage=0
stop_stage=2
units_config=conf/ctc/units.conf   # the units
model_config=conf/ctc/model.conf   # the CTC network
train_config=conf/ctc/train.conf   # its train.py options (frame stacking, subsampling)
batching_config=conf/batching.conf
schedule_config=conf/schedule.conf
train_opts=          # more train.py options
acwt=1.0             # acoustic scale of the TLG decoding (no priors, the network's own frames)
decode_opts="--lattice-beam 5"  # more steps/nnet/decode.sh options of the TLG decoding
scoring_opts="--min-lmwt 1 --max-lmwt 5"  # LM weights of the TLG route's scoring
beam_size=8          # prefix beam search of the route without a graph (besides greedy)
nj=2
device=cpu
decode_sets=test     # data/<set> decoded into <exp-dir>/decode_<set> (and _greedy, _beam<N>)
ref_normalize=false  # steps/score.sh's --ref-normalize
hybrid_dir=          # the summary: the hybrid model whose best WERs to show beside
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 2 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <lang-dir> <exp-dir>
 ... run from the recipe dir after its stage 2 (data/train_tr90, data/train_cv10); <lang-dir>
 has the words and the G.fst to decode with.
 e.g.: $0 --hybrid-dir exp/blstm ../kaldi/data/lang_test exp/blstm_ctc
Options (default): --units-config, --model-config, --train-config ($units_config, $model_config,
  $train_config), --batching-config, --schedule-config, --train-opts, --acwt S ($acwt),
  --decode-opts, --scoring-opts "...", --beam-size N ($beam_size), --nj N ($nj), --device
  ($device), --decode-sets "X Y" ($decode_sets), --ref-normalize ($ref_normalize),
  --hybrid-dir DIR, --stage, --stop-stage (0 units+network, 1 decoding, 2 summary)
USAGE
  exit 1
fi
lang_test=$1
ctc_dir=$2
units=exp/ctc_units

if run_stage 0; then
  banner 3 "CTC: units of data/train_tr90 into $units, train $ctc_dir ($model_config, $train_config)"
  if up_to_date $units/targets.scp data/train_tr90/text; then
    echo "$units is already made: skipping"
  else
    steps/nnet/train_units.sh --units-config $units_config --lang "$lang_test" data/train_tr90 $units
  fi
  if needs_training $ctc_dir; then
    steps/nnet/train_ctc.sh --cmd "$cuda_cmd" --device $device --restart $train_restart \
      --model-config $model_config --batching-config $batching_config \
      --schedule-config $schedule_config --train-config $train_config \
      ${train_opts:+--train-opts "$train_opts"} data/train_tr90 data/train_cv10 $units $ctc_dir
  fi
fi

if run_stage 1; then
  banner 4 "CTC: TLG of $units and $lang_test; decode $(printf 'data/%s ' $decode_sets)with and without it"
  if up_to_date $ctc_dir/graph/TLG.fst $units/units.model "$lang_test/G.fst"; then
    echo "$ctc_dir/graph is already made: skipping"
  else
    make_ctc_graph.py $units "$lang_test" $ctc_dir/graph
  fi
  steps/nnet/decode_sets.sh --nj $nj --cmd "$decode_cmd" --device $device \
    --ref-normalize $ref_normalize --scoring-opts "$scoring_opts" --decode-opts \
    "--class-frame-counts none --output-rate model --acwt $acwt $decode_opts" \
    $ctc_dir/graph $ctc_dir "$decode_sets"
  for x in $decode_sets; do
    spk=$(wc -l < data/$x/spk2utt); ctc_nj=$(( nj < spk ? nj : spk ))
    for b in 0 $beam_size; do
      name=greedy; [ $b -gt 0 ] && name=beam$b
      up_to_date $ctc_dir/decode_${x}_$name/wer_$name $ctc_dir/final.nnet && \
        [ "$(scored_normalized $ctc_dir/decode_${x}_$name)" == $ref_normalize ] && continue
      # (the units spell <lang-dir>'s words: train_units.sh --lang)
      steps/nnet/decode_ctc_units.sh --nj $ctc_nj --cmd "$decode_cmd" --device $device \
        --beam-size $b --words "$lang_test/words.txt" --ref-normalize $ref_normalize \
        $units data/$x $ctc_dir/decode_${x}_$name
    done
  done
fi

if run_stage 2; then
  recipe_summary.py --label "CTC model" --model-name "CTC network over the units of $units ($(cat $units/num_outputs) outputs), TLG decoding" \
    $ctc_dir $(printf "$ctc_dir/decode_%s " $decode_sets) | tee $ctc_dir/summary.txt
  if [ -n "$hybrid_dir" ]; then
    echo "best WERs side by side (hybrid $hybrid_dir | CTC through TLG | CTC greedy | CTC prefix beam $beam_size):"
    for x in $decode_sets; do
      echo "  $x: $(best_wer_of $hybrid_dir/decode_$x) | $(best_wer_of $ctc_dir/decode_$x) |" \
        "$(best_wer_of $ctc_dir/decode_${x}_greedy) | $(best_wer_of $ctc_dir/decode_${x}_beam$beam_size)"
    done | tee -a $ctc_dir/summary.txt
  fi
fi
