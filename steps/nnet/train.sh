#!/usr/bin/env bash
# Trains a hybrid acoustic model (BLSTM/LSTM/MLP over pdf-ids) with Kaldi nnet1's
# steps/nnet/train.sh interface. The alignment dirs are either imported ones
# (steps/import_ali.sh: targets.scp, num_pdfs, pdf_counts) or Kaldi alignment dirs
# (ali.*.gz + final.mdl), imported here into <exp-dir>/ali_{tr,cv}. Writes <exp-dir>/final.nnet
# (-> the best model), final.mdl and ali_train_pdf.counts (for decoding), metrics.jsonl,
# curves.png and log/train.log. Run it again to resume an interrupted training; --restart true
# trains from scratch (train.py removes its own files from <exp-dir> first, nothing else).
# --num-models N (N > 1): N-1 more networks of the same options and other seeds (train.conf's
# --seed + 1000 k) into <exp-dir>/member2..N, and final.nnet -> ensemble.nnet, one model that
# averages the N networks' log-posteriors (pybin/ensemble_nnet.py; Kaldi's decode_score_fusion.sh).

# Begin configuration section.
cmd=run.pl           # e.g. "queue.pl --gpu 1" from cmd.sh
model_config=        # e.g. conf/model/blstm.conf
batching_config=     # e.g. conf/batching/laplace.conf
schedule_config=     # e.g. conf/schedule/newbob.conf
train_config=        # a config file of any train.py options (train.py --config); Kaldi's own
                     # --config <file> sets this script's variables, as in every step script
device=              # cpu|cuda|auto (empty: train.py's --device)
nproc=1              # processes for torchrun (one per GPU); >1 needs --parallel ddp|average
parallel=            # ddp|average (default with nproc>1: ddp; with 1 process: train.py's)
num_threads=         # CPU threads per training process; the job asks $cmd for nproc times as
                     # many (--num-threads). Empty: the cores $cmd gives the job (its
                     # --num-threads, 1 by default as Kaldi's run.pl) shared among the processes
torchrun_opts=       # torchrun's own options, e.g. "--nnodes 2 --node-rank 0 --rdzv-endpoint host:29400"
train_opts=          # more train.py options, e.g. "--learning-rate=0.0005 --max-iters=10"
restart=false        # true: train from scratch (passes train.py --restart=true); false: resume
                     # <exp-dir> (passes nothing)
num_models=1         # networks trained (seeds --seed + 1000 k); more than 1: final.nnet is their
                     # ensemble (the average of their log-posteriors)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v train.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 6 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <data-train> <data-cv> <lang-dir> <ali-train> <ali-cv> <exp-dir>
 e.g.: $0 --model-config conf/model/blstm.conf --batching-config conf/batching/laplace.conf \\
          data/train_tr90 data/train_cv10 data/lang exp/mono_ali exp/mono_ali exp/blstm
Options:
  --cmd <run.pl|queue.pl ...>            # how to run the training job (default: $cmd)
  --model-config, --batching-config, --schedule-config, --train-config <file>
  --device cpu|cuda|auto                 # (default: train.py's)
  --nproc <n>                            # processes/GPUs via torchrun (default: $nproc)
  --parallel ddp|average                 # multi-process scheme (default: ddp when nproc>1)
  --num-threads <n>                      # CPU threads per training process (default: the
                                         # job's cores from \$cmd --num-threads, else 1)
  --torchrun-opts "<opts>"               # multi-node rendezvous etc., passed to torchrun
  --train-opts "<opts>"                  # more train.py options
  --restart true|false                   # train from scratch / resume (default: $restart)
  --num-models <n>                       # networks of other seeds averaged (default: $num_models)
USAGE
  exit 1
fi

data_tr=$1
data_cv=$2
lang=$3
ali_tr=$4
ali_cv=$5
dir=$6
steps=$(cd "$(dirname "$0")/.." && pwd)

for f in "$data_tr/feats.scp" "$data_cv/feats.scp"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done
[ -d "$lang" ] || echo "$0: warning: no lang dir $lang (only used for checks)" >&2

mkdir -p "$dir/log"

# Several nodes (torchrun --node-rank N in --torchrun-opts) share <exp-dir>: node 0 imports and
# copies the files and logs to log/train.log, node N to log/train.nodeN.log.
node_rank=$(echo " $torchrun_opts " | sed -nE 's/.* --node[-_]rank[= ]+([0-9]+) .*/\1/p')
node_rank=${node_rank:-0}
train_log=$dir/log/train.log
[ "$node_rank" -gt 0 ] && train_log=$dir/log/train.node$node_rank.log

# Kaldi alignment dirs are imported first (pdf-id targets, counts), once.
import_if_needed() {  # <ali-dir> <data-dir> <name> -> prints the imported dir
  local ali=$1 data=$2 name=$3 waited=0
  if [ -f "$ali/targets.scp" ] && [ -f "$ali/num_pdfs" ]; then
    echo "$ali"
  elif [ -f "$ali/final.mdl" ] && ls "$ali"/ali.*.gz >/dev/null 2>&1; then
    if [ "$node_rank" -gt 0 ]; then  # node 0 imports; wait for it
      until [ -f "$dir/$name/targets.scp" ] && [ -f "$dir/$name/num_pdfs" ]; do
        [ $waited -ge 600 ] && echo "$0: node $node_rank: node 0 did not import $ali into" \
          "$dir/$name in 10 minutes" >&2 && return 1
        sleep 5; waited=$((waited + 5))
      done
    elif [ ! -f "$dir/$name/targets.scp" ]; then
      # with the lang dir, the import checks that the alignments fit its phones
      if [ -f "$lang/phones.txt" ]; then
        "$steps/import_ali.sh" --lang "$lang" "$ali" "$data" "$dir/$name" >&2
      else
        "$steps/import_ali.sh" "$ali" "$data" "$dir/$name" >&2
      fi
    fi
    echo "$dir/$name"
  else
    echo "$0: $ali is neither an imported alignment dir (targets.scp) nor a Kaldi one" \
         "(final.mdl, ali.*.gz)" >&2
    return 1
  fi
}
case "$num_models" in ''|*[!0-9]*|0) echo "$0: --num-models must be a whole number, at least 1 (not '$num_models')" >&2; exit 1 ;; esac
ali_tr=$(import_if_needed "$ali_tr" "$data_tr" ali_tr)
ali_cv=$(import_if_needed "$ali_cv" "$data_cv" ali_cv)

for f in "$ali_tr/final.mdl" "$ali_tr/pdf_counts"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done
# what decoding needs, beside the network (nnet1's names)
if [ "$node_rank" -eq 0 ]; then
  cp "$ali_tr/final.mdl" "$dir/final.mdl"
  cp "$ali_tr/pdf_counts" "$dir/ali_train_pdf.counts"
  [ -f "$ali_tr/tree" ] && cp "$ali_tr/tree" "$dir/tree"
  [ -f "$ali_tr/phones.txt" ] && cp "$ali_tr/phones.txt" "$dir/phones.txt"
  # what transcribing a lone recording needs (steps/nnet/transcribe.sh): the training set's
  # global CMVN stats (Kaldi's global_cmvn.stats) and the conf its features were made with
  # (<data>/conf/, where Kaldi's make_mfcc.sh copies it, else the recipe's data/<type>.conf);
  # for fMLLR features, the GMM dir whose pipeline made them (fmllr_gmm, beside the conf)
  if [ -f "$data_tr/cmvn.scp" ]; then
    global_cmvn_stats.py "scp:$data_tr/cmvn.scp" "$dir/global_cmvn.stats" 2>"$dir/log/global_cmvn.log" \
      || echo "$0: warning: no global CMVN stats from $data_tr/cmvn.scp (see $dir/log/global_cmvn.log)" >&2
  fi
  for d in "$data_tr/conf" "$(dirname "$data_tr")"; do
    confs=(); for f in "$d"/{mfcc,fbank}.conf; do [ -f "$f" ] && confs+=("$f"); done
    [ ${#confs[@]} -eq 1 ] && { mkdir -p "$dir/conf"; cp "${confs[0]}" "$dir/conf/"; }
    if [ ${#confs[@]} -gt 0 ]; then
      rm -f "$dir/fmllr_gmm"; [ -f "$d/fmllr_gmm" ] && cp "$d/fmllr_gmm" "$dir/fmllr_gmm"
      break
    fi
  done
fi

opts=()
[ -n "$train_config" ] && opts+=(--config="$train_config")
[ -n "$model_config" ] && opts+=(--model-config="$model_config")
[ -n "$batching_config" ] && opts+=(--batching-config="$batching_config")
[ -n "$schedule_config" ] && opts+=(--schedule-config="$schedule_config")
[ -n "$device" ] && opts+=(--device="$device")
[ "$restart" == true ] && opts+=(--restart=true)
if [ "$nproc" -gt 1 ] || [ -n "$torchrun_opts" ]; then
  [ -z "$parallel" ] && parallel=ddp
  opts+=(--parallel="$parallel")
  # shellcheck disable=SC2086
  launcher=(torchrun --nproc-per-node "$nproc" $torchrun_opts "$(command -v train.py)")
  [ -z "$torchrun_opts" ] && launcher=(torchrun --standalone --nproc-per-node "$nproc" "$(command -v train.py)")
else
  [ -n "$parallel" ] && opts+=(--parallel="$parallel")
  launcher=(train.py)
fi

cmd_opts=()
if [ -n "$num_threads" ]; then
  opts+=(--num-threads="$num_threads")
  cmd_opts=(--num-threads $((num_threads * nproc)))
fi

echo "$0: training $dir on $data_tr (cv: $data_cv), targets from $ali_tr"
# shellcheck disable=SC2086
$cmd "${cmd_opts[@]}" "$train_log" \
  "${launcher[@]}" "${opts[@]}" $train_opts "$data_tr" "$data_cv" "$ali_tr" "$ali_cv" "$dir" \
  || { echo "$0: training failed, see $train_log:" >&2;
       grep -E "ERROR|Error" "$train_log" | tail -n 3 >&2 || true; exit 1; }

[ -e "$dir/final.nnet" ] || { echo "$0: no $dir/final.nnet after training; see $dir/log/train.log" >&2; exit 1; }
if [ "$num_models" -gt 1 ] && [ "$node_rank" -eq 0 ]; then
  # (train.py links final.nnet to its best epoch again whenever it runs: the first member)
  members=("$dir/$(readlink "$dir/final.nnet")")
  seed=$(sed -nE 's/^--seed=([0-9]+)$/\1/p' "$dir/train.conf" | tail -n 1)
  for k in $(seq 2 $num_models); do
    echo "$0: training member $k of $num_models into $dir/member$k (--seed=$((seed + 1000 * (k - 1))))"
    # shellcheck disable=SC2086
    $cmd "${cmd_opts[@]}" "$dir/log/train.member$k.log" \
      "${launcher[@]}" "${opts[@]}" $train_opts --seed=$((seed + 1000 * (k - 1))) \
      "$data_tr" "$data_cv" "$ali_tr" "$ali_cv" "$dir/member$k" \
      || { echo "$0: training member $k failed, see $dir/log/train.member$k.log" >&2; exit 1; }
    members+=("$dir/member$k/final.nnet")
  done
  $cmd "$dir/log/ensemble.log" ensemble_nnet.py "${members[@]}" "$dir/ensemble.nnet"
  ln -sfn ensemble.nnet "$dir/final.nnet.tmp" && mv -T "$dir/final.nnet.tmp" "$dir/final.nnet"
fi
echo "$0: done training $dir: final.nnet -> $(readlink "$dir/final.nnet"); metrics in $dir/metrics.jsonl, curves in $dir/curves.png"
