#!/usr/bin/env bash
# A TDNN-F chain (LF-MMI) model beside the hybrid one, in the shape of Kaldi's
# local/chain/run_tdnn.sh: the chain lang dir (chain_gen_topo.py: <lang-chain>), a chain tree
# of <ali-dir>'s alignment at frame subsampling factor 3 (steps/nnet/chain/build_tree.sh:
# <tree-dir>), the phone LM and den.fst of it (steps/nnet/chain/make_den_fst.sh: <den-dir>),
# the network <exp-dir> trained by train.py --objective=lfmmi on data/train_tr90 (cv:
# data/train_cv10) with <ali-dir>'s alignment as the numerator, the graph of <tree-dir> with
# --self-loop-scale 1.0 (<tree-dir>/graph) and decoding with --acwt 1.0 --post-decode-acwt 10.0.
# Each part is skipped when done; one made from other inputs or options is made again.
# Stages: 0 lang dir, tree, den.fst; 1 training; 2 graph, decoding, scoring; 3 summary.

# Begin configuration section.
stage=0
stop_stage=3
lang_chain=data/lang_chain   # the chain lang dir made from <lang-dir>
tree_dir=                    # default: <exp-dir>/../tree
den_dir=                     # default: <exp-dir>/../den
lang_test=                   # the graph's words and G.fst (default: <lang-dir>)
num_leaves=auto              # leaves of the chain tree (auto: chain_num_leaves.py, by data size)
frame_subsampling_factor=3
lat_dir=                     # the numerator from this Kaldi lattice dir of data/train (lat.*.gz,
                             # final.mdl, num_jobs: e.g. align_fmllr_lats.sh's exp/tri3b_lats),
                             # as Kaldi's chain recipes; empty: from <ali-dir>'s alignment
lat_data=                    # make that lattice dir here (default <exp-dir>/../lats): <ali-dir>'s
                             # GMM on this data dir (its own features of data/train's utterances)
                             # with steps/align_si.sh --generate-lats true, as Kaldi's recipes run
                             # align_fmllr_lats.sh (run.sh --chain true: data/train_gmm)
lat_opts="--normalize-unknown false"  # align_si.sh's options (unknown words as the OOV word, as a
                             # Kaldi GMM's own alignment has them: the tree's and den.fst's; a SAT
                             # GMM: --transform-dir <its ali dir>, its fMLLR transforms)
tree_data=data/train         # the tree's statistics (its features and the alignment's utterances)
data_tr=data/train_tr90      # trained on
data_cv=data/train_cv10
model_config=auto            # auto: by $tree_data's hours (choose_defaults.py, data/defaults.json):
                             # conf/model/tdnnf.conf (Kaldi's 1k) from 5 h up, tdnnf_small.conf below
batching_config=conf/batching.conf
schedule_config=conf/schedule/chain.conf  # Kaldi's chain schedule: fixed epochs, decay, dropout
train_opts=                  # more train.py options, e.g. "--max-iters=4 --lfmmi-xent-regularize=0.1"
nj=2
device=cpu
decode_sets=test             # data/<set> decoded into <exp-dir>/decode_<set>
decode_opts=                 # more steps/nnet/decode.sh options (after --acwt 1.0 --post-decode-acwt 10.0)
scoring_opts="--min-lmwt 4 --max-lmwt 17"  # steps/score.sh's LM weights: the hybrid's 4 up to the
                             # 17 of Kaldi's chain scoring (its local/score.sh: 7..17); the chain
                             # BLSTM's best on polish lies at 12-17 (docs/chain.md)
ref_normalize=false          # steps/score.sh's --ref-normalize
gmm_decode_dir=              # the summary: the GMM's decode dir to show beside the model's
hybrid_dir=                  # the summary: the hybrid model whose best WERs to show beside
# End configuration section.

echo "$0 $@"
. ./cmd.sh
. ./path.sh
. utils/parse_options.sh
. utils/recipe_lib.sh
set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <lang-dir> <ali-dir> <exp-dir>
 ... run from the recipe dir after its stage 2 (data/train, data/train_tr90, data/train_cv10
 with features); <ali-dir> is the GMM's Kaldi alignment dir of data/train (ali.*.gz,
 final.mdl, num_jobs), <lang-dir> the lang dir it was made with.
 e.g.: $0 --hybrid-dir exp/blstm ../kaldi/data/lang ../kaldi/exp/tri1_ali exp/chain/tdnn
Options (default): --lang-chain DIR ($lang_chain), --tree-dir, --den-dir DIR (<exp-dir>/../tree,
  ../den), --lang-test DIR (<lang-dir>), --num-leaves N|auto ($num_leaves),
  --frame-subsampling-factor N ($frame_subsampling_factor), --tree-data, --data-tr, --data-cv DIR
  ($tree_data, $data_tr, $data_cv), --model-config, --batching-config, --schedule-config
  ($model_config, $batching_config, $schedule_config), --train-opts, --nj N ($nj), --device
  ($device), --decode-sets "X Y" ($decode_sets), --decode-opts, --scoring-opts, --ref-normalize
  ($ref_normalize), --gmm-decode-dir, --hybrid-dir DIR, --lat-dir DIR (the numerator from its
  lattices), --lat-data DIR (make them: the GMM's features), --lat-opts "..." ($lat_opts),
  --stage, --stop-stage (0 tree+den[+lattices], 1 training, 2 graph+decoding, 3 summary)
USAGE
  exit 1
fi
lang_dir=$1
ali_dir=$2
dir=$3
check_stage_options 3
[ -n "$tree_dir" ] || tree_dir=$(dirname $dir)/tree
[ -n "$den_dir" ] || den_dir=$(dirname $dir)/den
[ -n "$lang_test" ] || lang_test=$lang_dir
fsf=$frame_subsampling_factor
graph_dir=$tree_dir/graph
for f in "$lang_dir/phones.txt" "$lang_dir/topo" "$ali_dir/final.mdl" "$ali_dir/num_jobs" \
    "$ali_dir/ali.1.gz"; do
  [ -f "$f" ] || { echo "$0: missing $f (<lang-dir>, <ali-dir>: the GMM's)" >&2; exit 1; }
done
if [ -n "$lat_data" ]; then
  [ -n "$lat_dir" ] || lat_dir=$(dirname $dir)/lats
  if run_stage 0; then  # (made there)
    for f in "$lat_data/feats.scp" "$lat_data/cmvn.scp" "$lat_data/text" "$ali_dir/tree"; do
      [ -f "$f" ] || { echo "$0: missing $f (--lat-data: the GMM's features of $tree_data's utterances; <ali-dir>: a GMM's)" >&2; exit 1; }
    done
    if [ -f $lat_dir/lat.1.gz ] && [ ! -f $lat_dir/stage.json ]; then  # (never another's lattices)
      echo "$0: --lat-data would make lattices into $lat_dir, which holds lattices not made here:" \
        "give that dir as --lat-dir without --lat-data, or another --lat-dir" >&2; exit 1
    fi
  fi
elif [ -n "$lat_dir" ]; then
  for f in "$lat_dir/lat.1.gz" "$lat_dir/final.mdl" "$lat_dir/num_jobs"; do
    [ -f "$f" ] || { echo "$0: missing $f (--lat-dir: a Kaldi lattice dir of $tree_data)" >&2; exit 1; }
  done
fi
for f in $tree_data/feats.scp $data_tr/feats.scp $data_cv/feats.scp; do
  [ -f "$f" ] || { echo "$0: missing $f (run the recipe's stages 0-2 first)" >&2; exit 1; }
done
[ $stop_stage -lt 2 ] || check_decode_sets

if run_stage 0; then
  banner 0 "chain: $lang_chain, the tree of $ali_dir ($num_leaves leaves, frame subsampling $fsf) and its den.fst"
  if up_to_date $lang_chain/topo "$lang_dir/phones.txt" "$lang_dir/topo"; then
    echo "$lang_chain is already made: skipping"
  else
    rm -rf $lang_chain
    chain_gen_topo.py --lang-in="$lang_dir" --lang-out=$lang_chain
  fi
  mkdir -p $tree_dir
  stage_begin $tree_dir/stage.json num_leaves=$num_leaves frame_subsampling_factor=$fsf \
    $lang_chain/topo "$ali_dir" $tree_data/feats.scp $tree_data/cmvn.scp
  if [ $stage_status == done ] && [ -s $tree_dir/tree ]; then
    echo "$tree_dir is already built from $ali_dir: skipping"
  else
    steps/nnet/chain/build_tree.sh --cmd "$train_cmd" --frame-subsampling-factor $fsf \
      $num_leaves $tree_data $lang_chain "$ali_dir" $tree_dir
    stage_finish $tree_dir/stage.json
  fi
  if up_to_date $den_dir/den.fst $tree_dir/tree $tree_dir/final.mdl "$ali_dir/final.mdl" && \
      up_to_date $den_dir/normalization.fst $tree_dir/tree; then
    echo "$den_dir/den.fst is already made: skipping"
  else
    rm -f $den_dir/den.fst $den_dir/normalization.fst
    steps/nnet/chain/make_den_fst.sh --cmd "$train_cmd" $tree_dir "$ali_dir" $den_dir
  fi
  if [ -n "$lat_data" ]; then  # (the numerator's lattices: Kaldi's align_fmllr_lats.sh)
    mkdir -p $lat_dir
    stage_begin $lat_dir/stage.json "lat_opts=$lat_opts" "$ali_dir" "$lang_dir/L.fst" \
      $lat_data/feats.scp $lat_data/cmvn.scp $lat_data/text
    if [ $stage_status == done ] && [ -s $lat_dir/lat.1.gz ]; then
      echo "$lat_dir already holds the lattices of $ali_dir: skipping"
    else
      # shellcheck disable=SC2086
      steps/align_si.sh --nj $nj --cmd "$train_cmd" --generate-lats true $lat_opts \
        $lat_data "$lang_dir" "$ali_dir" $lat_dir
      stage_finish $lat_dir/stage.json
    fi
  fi
fi

if [ "$model_config" == auto ]; then  # by $tree_data's hours (hybridasr/recipe/data_defaults.py)
  model_config=$(choose_defaults.py --get=chain_model_config $tree_data data/defaults.json)
fi
if run_stage 1; then
  banner 1 "chain: train $dir (LF-MMI; $model_config, $batching_config, $schedule_config, $device)"
  # (changed train.py options are notes, as run.sh's: a resumed training applies them itself)
  stage_begin $dir/stage1.json "--note=train_opts=$train_opts" "$model_config" \
    "$batching_config" "$schedule_config" $den_dir/den.fst $data_tr/feats.scp \
    $data_cv/feats.scp "$ali_dir" ${lat_dir:+"$lat_dir"}
  if needs_training $dir $stage_status; then
    if [ -n "$lat_data" ] && [ ! -s $lat_dir/lat.1.gz ]; then
      echo "$0: no lattices in $lat_dir yet: run stage 0 (--lat-data makes them there)" >&2; exit 1
    fi
    opts=(--model-config="$model_config" --batching-config="$batching_config"
      --schedule-config="$schedule_config" --device=$device)
    [ $train_restart == true ] && opts+=(--restart=true)
    # (the numerator reads the Kaldi alignment or lattice dir itself: no import as
    # steps/nnet/train.sh's)
    num_dir=${lat_dir:-$ali_dir}
    echo "$0: training $dir on $data_tr (cv: $data_cv), numerator from $num_dir, den from $den_dir"
    # shellcheck disable=SC2086
    $cuda_cmd $dir/log/train.log train.py "${opts[@]}" --objective=lfmmi \
        --lfmmi-den-fst=$den_dir $train_opts $data_tr $data_cv "$num_dir" "$num_dir" $dir \
      || { echo "$0: training failed, see $dir/log/train.log:" >&2;
           grep -E "ERROR|Error" $dir/log/train.log | tail -n 3 >&2 || true; exit 1; }
  fi
  stage_finish $dir/stage1.json
fi

if run_stage 2; then
  banner 2 "chain: $graph_dir (--self-loop-scale 1.0); decode $(printf 'data/%s ' $decode_sets)and score"
  if up_to_date $graph_dir/HCLG.fst $tree_dir/final.mdl $tree_dir/tree "$lang_test/G.fst"; then
    echo "$graph_dir is already made: skipping"
  else
    utils/mkgraph.sh --self-loop-scale 1.0 "$lang_test" $tree_dir $graph_dir
  fi
  steps/nnet/decode_sets.sh --nj $nj --cmd "$decode_cmd" --device $device \
    --ref-normalize $ref_normalize --scoring-opts "$scoring_opts" \
    --decode-opts "--acwt 1.0 --post-decode-acwt 10.0 $decode_opts" $graph_dir $dir "$decode_sets"
fi

if run_stage 3; then
  leaves=$(json_get.py $tree_dir/tree_report.json num_leaves 2>/dev/null || echo '?')
  # the model config the network was trained with (its train.conf's command line)
  trained=$(head -n 1 $dir/train.conf 2>/dev/null | grep -o -- '--model-config=[^ ]*' | cut -d= -f2-)
  model_config=${trained:-$model_config}
  recipe_summary.py --label "chain model" ${gmm_decode_dir:+--gmm-decode-dir "$gmm_decode_dir"} \
    --model-name "TDNN-F chain model (LF-MMI; $model_config) on the alignments of $ali_dir, $leaves-leaf tree" \
    $dir $(printf "$dir/decode_%s " $decode_sets) | tee $dir/summary.txt
  if [ -n "$hybrid_dir" ]; then
    echo "best WERs side by side (hybrid $hybrid_dir | chain $dir):"
    for x in $decode_sets; do
      echo "  $x: $(best_wer_of $hybrid_dir/decode_$x) | $(best_wer_of $dir/decode_$x)"
    done | tee -a $dir/summary.txt
  fi
fi
