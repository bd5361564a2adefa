#!/usr/bin/env bash
# GMM-free training of a hybrid network from transcripts (Senior et al. 2014, "GMM-free DNN
# training"; Kaldi's train_mono.sh without the GMM): a monophone tree and transition model from
# the lang dir (init_mono.py, as gmm-init-mono), an equal alignment of each utterance on its
# training graph (align_equal.py, as align-equal-compiled), a first network trained by
# Baum-Welch over every path of each training graph (--first-objective fullsum, the default:
# train.py --objective=fullsum; RASR/RETURNN's full-sum training from scratch) or on the equal
# alignment (ce), then --num-rounds rounds of realign-and-retrain
# (steps/nnet/realign_round.sh). Every alignment is an ordinary Kaldi alignment dir. Writes
# into <exp-dir>:
#   mono/       tree, final.mdl (the TransitionModel alone), phones.txt
#   ali0/       the equal alignment (ali.JOB.gz, final.mdl, tree, num_jobs,
#               log/align_report.JOB.json: utterances too short for their transcript or
#               without one are skipped and named there), ali0_targets/ (imported)
#   nnet0/      the first network (what steps/nnet/train.sh leaves)
#   ali<k>/, ali<k>_targets/, nnet<k>/   round k: aligned with nnet<k-1>, trained on it
#   final_nnet_dir  the name of the last network dir (nnet<num-rounds>)
# Each part is skipped when done, so an interrupted run goes on where it stopped.

# Begin configuration section.
cmd=run.pl           # how to run the alignment jobs
train_cmd=           # how to run the training jobs (default: --cmd), e.g. "queue.pl --gpu 1"
nj=4                 # parallel alignment jobs
num_rounds=3         # realign-and-retrain rounds after the first network
round_init=scratch   # scratch: each round trains a new network | previous: goes on training
                     # the aligning one (steps/nnet/realign_round.sh --init)
seed=0               # align_equal.py --seed: the random paths of the equal alignment
first_subset=0       # >0: nnet0 trains on this many of the shortest training utterances
                     # only (an equal alignment is closest to the truth on short ones; Kaldi's
                     # train_mono.sh on utils/subset_data_dir.sh --shortest), the rounds on all
data_tr=             # training part of <data-dir> (default: <data-dir>_tr90)
data_cv=             # its cross-validation part (default: <data-dir>_cv10); both are made by
                     # utils/subset_data_dir_tr_cv.sh when missing
train_opts=          # more train.py options, every network
first_objective=fullsum # nnet0's objective: fullsum: Baum-Welch over each utterance's
                     # training graph (train.py --objective=fullsum: every path of the
                     # transcript, re-weighted by the network at each batch; the equal
                     # alignment then only gives frame counts) | ce: frame cross-entropy on the
                     # equal alignment (a BLSTM learns where in the utterance a label falls)
fullsum_opts="--fullsum-prior-scale=0.5" # train.py options of nnet0 with --first-objective fullsum
first_train_opts="--keep-lr-iters=2" # train.py options of nnet0 only (after --train-opts):
                     # its first epochs are kept whatever the cv loss, which on equal
                     # alignments says little (on 9 utterances none beat the initial model)
round_train_opts=    # train.py options of the rounds only (after --train-opts)
align_opts=          # more steps/nnet/align.sh options in the rounds, e.g. "--beam 20"
# Passed on only when given (empty: the default of the step that takes them):
prior_scale=         # steps/nnet/align.sh: prior scale of the rounds' alignments
device=              # steps/nnet/align.sh and train.sh: cpu|cuda|auto
model_config=        # steps/nnet/train.sh: conf files
batching_config=
schedule_config=
nproc=               # train.sh: processes (GPUs) for torchrun
parallel=            # train.sh: ddp|average
torchrun_opts=       # train.sh: torchrun's own options
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v align_equal.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-dir> <lang-dir> <exp-dir>
 ... where <data-dir> has feats.scp, cmvn.scp and text, and <lang-dir> is a lang dir
 (utils/prepare_lang.sh: L.fst, topo, phones/sets.int, words.txt, oov.int).
 e.g.: $0 --nj 4 --num-rounds 3 data/train data/lang exp/flat
Options:
  --cmd (run.pl|queue.pl ...)  # how to run the alignment jobs (default: $cmd)
  --train-cmd <cmd>            # how to run the training (default: --cmd)
  --nj <n>                     # parallel alignment jobs (default: $nj)
  --num-rounds <n>             # realign-and-retrain rounds (default: $num_rounds)
  --round-init scratch|previous # a round trains a new network, or goes on training the
                               # aligning one (default: $round_init)
  --seed <n>                   # seed of the equal alignment's paths (default: $seed)
  --first-objective fullsum|ce # nnet0: Baum-Welch on the training graphs, or cross-entropy
                               # on the equal alignment (default: $first_objective)
  --fullsum-opts "<opts>"      # train.py options of a fullsum nnet0 (default: "$fullsum_opts")
  --first-subset <n>           # nnet0 on the n shortest training utterances (default: $first_subset: all)
  --data-tr, --data-cv <dir>   # training/cv parts (default: <data-dir>_tr90, <data-dir>_cv10)
  --train-opts, --first-train-opts, --round-train-opts "<opts>"  # train.py options: all,
                               # the first network's, the rounds'
  --align-opts "<opts>"        # more steps/nnet/align.sh options
 Passed on only when given (default: the step's that takes them):
  --prior-scale <float>        # steps/nnet/align.sh
  --device cpu|cuda|auto       # steps/nnet/align.sh and train.sh
  --model-config, --batching-config, --schedule-config <file>, --nproc <n>,
  --parallel ddp|average, --torchrun-opts "<opts>" # steps/nnet/train.sh
USAGE
  exit 1
fi

data=$1
lang=$2
dir=$3
steps=$(cd "$(dirname "$0")/.." && pwd)
utils=$(cd "$(dirname "$0")/../../utils" && pwd)

case "$first_objective" in
  fullsum|ce) ;;
  *) echo "$0: --first-objective is fullsum or ce, not '$first_objective'" >&2; exit 1 ;;
esac
case "$round_init" in
  previous|scratch) ;;
  *) echo "$0: --round-init is scratch or previous, not '$round_init'" >&2; exit 1 ;;
esac
for f in "$data/feats.scp" "$data/text" "$lang/L.fst" "$lang/topo" "$lang/words.txt" \
         "$lang/phones.txt" "$lang/phones/sets.int"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done
[ -z "$data_tr" ] && data_tr=${data}_tr90
[ -z "$data_cv" ] && data_cv=${data}_cv10
[ -n "$train_cmd" ] || train_cmd=$cmd
nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")

mkdir -p "$dir/log"

# the options given, as "--name value" (an empty one is left to the step)
given() {  # <array> <variable>...
  local -n to=$1
  local v
  shift
  for v in "$@"; do
    if [ -n "${!v}" ]; then to+=("--${v//_/-}" "${!v}"); fi
  done
}
train_args=(--cmd "$train_cmd")
given train_args device model_config batching_config schedule_config nproc parallel \
  torchrun_opts
round_args=(--cmd "$cmd" --train-cmd "$train_cmd" --nj "$nj" --init "$round_init")
given round_args prior_scale device model_config batching_config schedule_config nproc \
  parallel torchrun_opts

# 1. the monophone tree and transition model
if [ -s "$dir/mono/final.mdl" ] && [ -s "$dir/mono/tree" ]; then
  echo "$dir/mono already holds the monophone model: skipping"
else
  mkdir -p "$dir/mono"
  init_mono.py --shared-phones="$lang/phones/sets.int" "$lang/topo" "$dir/mono/final.mdl" \
    "$dir/mono/tree" 2> "$dir/mono/init_mono.log" || {
      echo "$0: init_mono.py failed, see $dir/mono/init_mono.log:" >&2
      tail -n 3 "$dir/mono/init_mono.log" >&2; exit 1; }
  cp -L "$lang/phones.txt" "$dir/mono/phones.txt"
fi

# 2. the equal alignment
ali0=$dir/ali0
if [ -s "$ali0/num_jobs" ] && [ "$ali0/num_jobs" -nt "$dir/mono/final.mdl" ]; then
  echo "$ali0 already holds the equal alignment: skipping"
else
  mkdir -p "$ali0/log"
  rm -f "$ali0/num_jobs" "$ali0"/ali.*.gz "$ali0"/log/align_report.*.json
  cp "$dir/mono/final.mdl" "$dir/mono/tree" "$dir/mono/phones.txt" "$ali0/"
  sdata=$data/split$nj
  # split_data.sh does nothing when the split is newer than every file of $data (cmvn.scp
  # too, which a test of feats.scp alone missed)
  "$utils/split_data.sh" "$data" $nj
  echo "$0: equal alignment of $data ($nj jobs)"
  $cmd JOB=1:$nj "$ali0/log/align.JOB.log" \
    align_equal.py --seed=$seed --report="$ali0/log/align_report.JOB.json" \
      "$ali0/tree" "$ali0/final.mdl" "$lang" "scp:$sdata/JOB/feats.scp" \
      "ark:$sdata/JOB/text" "ark:|gzip -c > $ali0/ali.JOB.gz" || {
    echo "$0: equal alignment failed; see $ali0/log/align.*.log:" >&2
    grep -ihE "error|exception" "$ali0"/log/align.*.log | tail -n 3 >&2 || true
    exit 1; }
  utts=0; aligned=0; short=0; no_text=0; oov=0
  for n in $(seq $nj); do
    read -r -d '' u a s t o <<< "$(json_get.py "$ali0/log/align_report.$n.json" utterances \
      aligned num_too_short num_no_transcript oov_words)" || true
    utts=$((utts + u)); aligned=$((aligned + a)); short=$((short + s))
    no_text=$((no_text + t)); oov=$((oov + o))
  done
  if [ $aligned -eq 0 ]; then
    echo "$0: no utterance of $data could be aligned (see $ali0/log/align.*.log)" >&2
    exit 1
  fi
  echo $nj > "$ali0/num_jobs"
  echo "$0: aligned $aligned of $utts utterances equally into $ali0; $short too short for" \
       "their transcript, $no_text without transcript (named in" \
       "$ali0/log/align_report.JOB.json); $oov transcript words mapped to the OOV word"
fi

# 3. the training and cv parts
if [ -s "$data_tr/feats.scp" ] && [ -s "$data_cv/feats.scp" ]; then
  echo "$data_tr and $data_cv exist: using them"
else
  "$utils/subset_data_dir_tr_cv.sh" "$data" "$data_tr" "$data_cv"
fi

# 4. the first network, on the equal alignment
if [ -s "${ali0}_targets/targets.scp" ] && [ "${ali0}_targets/targets.scp" -nt "$ali0/num_jobs" ]
then
  echo "${ali0}_targets is already imported: skipping"
else
  "$steps/import_ali.sh" "$ali0" "$data" "${ali0}_targets"
fi
if [ -e "$dir/nnet0/final.nnet" ]; then
  echo "$dir/nnet0/final.nnet exists: skipping (delete it to train again)"
else
  opts="$train_opts${first_train_opts:+${train_opts:+ }$first_train_opts}"
  if [ "$first_objective" == fullsum ]; then
    # --fullsum-opts first: --train-opts (run.sh --flat-train-opts) given after them wins
    opts="${fullsum_opts:+$fullsum_opts }$opts --objective=fullsum"
    opts="$opts --fullsum-model-dir=$dir/mono --fullsum-lang=$lang"
  fi
  first_tr=$data_tr
  if [ "$first_subset" -gt 0 ] && [ "$first_subset" -lt "$(wc -l < "$data_tr/utt2spk")" ]; then
    first_tr=$dir/data_tr_short$first_subset
    "$utils/subset_data_dir.sh" --shortest "$data_tr" "$first_subset" "$first_tr"
  fi
  "$steps/nnet/train.sh" "${train_args[@]}" ${opts:+--train-opts "$opts"} \
    "$first_tr" "$data_cv" "$lang" "${ali0}_targets" "${ali0}_targets" "$dir/nnet0"
fi
if [ "$first_objective" == fullsum ]; then
  # a fullsum nnet0's pdf counts would be the equal alignment's, which it never learnt: equal
  # counts instead, so that aligning or decoding with it divides by no prior (a constant)
  n=$(cat "${ali0}_targets/num_pdfs")
  awk -v n="$n" 'BEGIN { printf "["; for (i = 0; i < n; i++) printf " 1"; print " ]" }' \
    > "$dir/nnet0/ali_train_pdf.counts.tmp"
  mv "$dir/nnet0/ali_train_pdf.counts.tmp" "$dir/nnet0/ali_train_pdf.counts"
fi

# 5. the rounds
for k in $(seq 1 $num_rounds); do
  echo "$0: round $k of $num_rounds: align with $dir/nnet$((k - 1)), train $dir/nnet$k"
  # shellcheck disable=SC2086
  "$steps/nnet/realign_round.sh" "${round_args[@]}" ${align_opts:+--align-opts "$align_opts"} \
    ${train_opts:+--train-opts "$train_opts"} \
    ${round_train_opts:+--round-train-opts "$round_train_opts"} \
    "$data" "$data_tr" "$data_cv" "$lang" "$dir/nnet$((k - 1))" "$dir/ali$k" "$dir/nnet$k"
done

echo "nnet$num_rounds" > "$dir/final_nnet_dir.tmp"
mv "$dir/final_nnet_dir.tmp" "$dir/final_nnet_dir"
echo "$0: done: $dir/nnet$num_rounds is the last network (named in $dir/final_nnet_dir)"
