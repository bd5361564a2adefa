#!/usr/bin/env bash
# Decodes a data dir with a trained hybridasr network, with Kaldi nnet1's steps/nnet/decode.sh
# interface. forward.py writes scaled log-likelihoods (log-posteriors minus log-priors from
# the pdf counts); with Kaldi's latgen-faster-mapped on PATH they are piped into it exactly as
# Kaldi's nnet1 does (<decode-dir>/lat.JOB.gz); otherwise they are kept in
# <decode-dir>/loglikes.JOB.{ark,scp} and the embedded decoder reads them: the toolkit's C++
# lattice decoder (latgen_faster_mapped.py, Kaldi's latgen-faster-mapped) writes lat.JOB.gz
# where it is built; without a C++ compiler (one warning says so) or with --lattices false,
# decode_faster_mapped.py (Kaldi's FasterDecoder) writes the 1-best hyp.JOB.tra and scoring
# decodes again once per LM weight. Then steps/score.sh writes wer_LMWT (see its --lattices).
# With --gmm-dir, a Kaldi GMM of the network's tree scores the same frames too
# (gmm_compute_likes.py) and the decoder reads (1 - gmm_weight) x the network's plus gmm_weight
# x the GMM's log-likelihoods (matrix_sum.py): Kaldi's DecodableSumScaled, the frame-level form
# of steps/decode_combine.sh (0.5 each).

# Begin configuration section.
nnet=               # non-default network (default: <srcdir>/final.nnet)
model=              # non-default transition model (default: <srcdir>/final.mdl)
class_frame_counts= # non-default pdf counts (default: <srcdir>/ali_train_pdf.counts); none:
                    # no priors, the log-posteriors as they are (CTC; the transition model
                    # then defaults to <graph-dir>/final.mdl, make_ctc_graph.py's)
srcdir=             # non-default model dir (default: the parent of <decode-dir>)
stage=0             # 1: skip decoding, only score
nj=4
cmd=run.pl
decoder=auto        # auto (Kaldi's latgen-faster-mapped if on PATH) | kaldi | embedded
acwt=0.10           # acoustic scale of the decoding (scoring sweeps LM weights; chain: 1.0)
post_decode_acwt=1.0  # the lattices' acoustic costs times this (Kaldi's nnet3 decode.sh;
                    # chain: 10.0, so the usual LM weights score them): the log-likelihoods are
                    # written times it and the decoder's acoustic scale divided by it
chain=auto          # true: a chain model (--objective=lfmmi): its outputs as log-likelihoods
                    # at its own frame rate, no priors | false | auto: true where <srcdir> has
                    # frame_subsampling_factor (what the chain training writes)
beam=13.0
lattices=auto       # embedded decoder: auto: lattices where the toolkit's C++ lattice decoder
                    # is built, else (with a warning) as false | true: lattices (an error
                    # without the C++ one) | false: 1-best, and scoring re-decodes per LM weight
lattice_beam=8.0    # lattices (Kaldi's or the toolkit's C++ decoder)
min_active=200
max_active=7000
max_mem=            # lattice determinization memory (bytes; empty: the decoder's, 50000000)
prior_scale=        # scale of the log-priors (empty: forward.py's, 1.0)
device=cpu          # cpu|cuda|auto, as steps/nnet/train.sh's
output_rate=        # input|model: forward.py's --output-rate (empty: its default, input);
                    # model: a subsampling network's own frames, not repeated (CTC: 1/3 of
                    # the frames to search, and fewer equal paths to determinize)
chunking=           # size:step, as train.py's: forward windows of size frames every step
                    # frames, keeping the middle step outputs of each (empty: whole utterances)
gmm_dir=            # a Kaldi GMM dir (final.mdl, tree) of the network's tree whose
                    # log-likelihoods are added (empty: the network's alone)
gmm_weight=0.5      # their weight; the network's is 1 - it (0: the network's alone)
gmm_feats=pipeline  # the GMM's features: pipeline: <gmm-dir>'s own (its cmvn_opts, then
                    # splice_opts + final.mat, else deltas) on the data dir's features | asis:
                    # the data dir's features are the GMM's (its fMLLR features)
skip_scoring=false
ref_normalize=false # steps/score.sh: reference words outside words.txt read as alignment reads them
scoring_opts=       # options for steps/score.sh, e.g. "--min-lmwt 4 --max-lmwt 15"
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v forward.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <graph-dir> <data-dir> <decode-dir>
 ... where <decode-dir> is a sub-directory of the directory with the network (final.nnet),
 the transition model (final.mdl) and the pdf counts (ali_train_pdf.counts).
 e.g.: $0 --nj 4 --acwt 0.1 exp/mono/graph data/test exp/blstm/decode_test
       $0 --acwt 1.0 --post-decode-acwt 10.0 exp/chain/tree/graph data/test exp/chain/tdnn/decode_test
Options:
  --nj <nj>                    # number of parallel jobs (default: $nj)
  --cmd (run.pl|queue.pl ...)  # how to run the jobs (default: $cmd)
  --nnet <file>                # network (default: <srcdir>/final.nnet)
  --srcdir <dir>               # model dir (default: parent of <decode-dir>)
  --decoder auto|kaldi|embedded  # (default: $decoder)
  --lattices auto|true|false   # embedded decoder: lattices or 1-best (default: $lattices)
  --device cpu|cuda|auto       # where the network runs (default: $device)
  --chunking <size:step>       # forward in overlapping windows (default: whole utterances)
  --output-rate input|model    # model: the network's own frames, not repeated (CTC)
  --acwt <float>               # acoustic scale (default: $acwt; CTC: about 0.5-1.0; chain: 1.0)
  --post-decode-acwt <float>   # lattice acoustic costs times this (default: $post_decode_acwt; chain: 10.0)
  --chain auto|true|false      # a chain (LF-MMI) model: no priors, subsampled outputs (default: $chain)
  --class-frame-counts <file|none>  # pdf counts (default: <srcdir>/ali_train_pdf.counts);
                               # none: no priors (CTC log-posteriors, with make_ctc_graph.py's graph)
  --beam <float> --lattice-beam <float> --max-active <int>  # pruning
  --skip-scoring true|false    # (default: $skip_scoring)
  --scoring-opts <opts>        # options for steps/score.sh
  --ref-normalize true|false   # steps/score.sh's (default: $ref_normalize: Kaldi's scoring)
  --gmm-dir <dir>              # add the log-likelihoods of this Kaldi GMM (the network's tree)
  --gmm-weight <float>         # their weight, the network's 1 - it (default: $gmm_weight)
  --gmm-feats pipeline|asis    # the GMM's features: its dir's pipeline, or the data's as they are
USAGE
  exit 1
fi

graphdir=$1
data=$2
dir=$3

steps=$(cd "$(dirname "$0")/.." && pwd)
utils=$(cd "$(dirname "$0")/../../utils" && pwd)

[ -z "$srcdir" ] && srcdir=$(dirname "$dir")
[ -z "$nnet" ] && nnet=$srcdir/final.nnet
[ -z "$model" ] && model=$srcdir/final.mdl
[ -z "$class_frame_counts" ] && class_frame_counts=$srcdir/ali_train_pdf.counts
counts_file=$class_frame_counts  # what forward.py gets (empty: log-posteriors)
chain_opt=  # forward.py's --chain (none: auto there, the model's stored objective)
case $chain in
  auto) if [ -f "$srcdir/frame_subsampling_factor" ]; then chain=true; chain_opt=--chain=true; else chain=false; fi ;;
  true|false) chain_opt=--chain=$chain ;;
  *) echo "$0: bad --chain $chain (auto|true|false)" >&2; exit 1 ;;
esac
if $chain; then  # chain outputs are log-likelihoods already: no priors
  counts_file=
  if [ -n "$chunking" ]; then echo "$0: --chunking: a chain model decodes whole utterances" >&2; exit 1; fi
fi
# the decoder's acoustic scale: acwt / post_decode_acwt on log-likelihoods times post_decode_acwt
if ! dec_acwt=$(awk -v a="$acwt" -v p="$post_decode_acwt" \
    'BEGIN { if (a + 0 <= 0 || p + 0 <= 0) exit 1; if (p == 1) print a; else printf "%.10g", a / p }'); then
  echo "$0: --acwt and --post-decode-acwt must be positive numbers" >&2; exit 1
fi
if [ "$class_frame_counts" == none ]; then  # CTC: no priors; the graph dir's identity model
  counts_file=
  [ ! -f "$model" ] && [ -f "$graphdir/final.mdl" ] && model=$graphdir/final.mdl
fi

# the GMM's log-likelihoods beside the network's (--gmm-dir; a weight of 0: none)
fuse=false
if [ -n "$gmm_dir" ] && awk -v w="$gmm_weight" 'BEGIN { exit !(w != 0) }'; then
  if ! net_weight=$(awk -v w="$gmm_weight" 'BEGIN { if (w + 0 != w || w < 0 || w > 1) exit 1; printf "%.10g", 1 - w }'); then
    echo "$0: --gmm-weight $gmm_weight: give a number from 0 to 1" >&2; exit 1
  fi
  case $gmm_feats in
    pipeline) gmm_likes_opts=(--feature-pipeline="$gmm_dir") ;;
    asis) gmm_likes_opts=(--delta-order=0 --norm-means=false) ;;
    *) echo "$0: bad --gmm-feats $gmm_feats (pipeline|asis)" >&2; exit 1 ;;
  esac
  if $chain || [ -z "$counts_file" ]; then
    echo "$0: --gmm-dir: a network of pdf priors only (not a chain or CTC model)" >&2; exit 1
  fi
  for f in "$gmm_dir/final.mdl" "$gmm_dir/tree"; do
    [ ! -f "$f" ] && echo "$0: --gmm-dir: missing file $f" >&2 && exit 1
  done
  if [ -f "$srcdir/tree" ] && ! cmp -s "$srcdir/tree" "$gmm_dir/tree"; then
    echo "$0: --gmm-dir $gmm_dir: its tree is not the network's ($srcdir/tree): their pdfs differ" >&2
    exit 1
  fi
  fuse=true
fi

if [ -d "$graphdir" ] && [ ! -f "$graphdir/words.txt" ]; then
  echo "$0: graph dir $graphdir has no words.txt (copy it from the lang dir the graph was made from)" >&2
  exit 1
fi
for f in "$graphdir/HCLG.fst" "$data/feats.scp" "$nnet" "$model" ${counts_file:+"$counts_file"}; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done

case $decoder in
  auto) if command -v latgen-faster-mapped >/dev/null 2>&1; then decoder=kaldi; else decoder=embedded; fi ;;
  kaldi) command -v latgen-faster-mapped >/dev/null 2>&1 || { echo "$0: --decoder kaldi but latgen-faster-mapped is not on PATH" >&2; exit 1; } ;;
  embedded) ;;
  *) echo "$0: bad --decoder $decoder (auto|kaldi|embedded)" >&2; exit 1 ;;
esac
# the embedded decoder writes lattices where the toolkit's C++ lattice decoder is built
embedded_lattices=false
case $lattices in
  auto|true|false) ;;
  *) echo "$0: bad --lattices $lattices (auto|true|false)" >&2; exit 1 ;;
esac
if [ $decoder = embedded ] && [ $lattices != false ]; then
  if why=$("$utils/lattice_decoder_built.sh" 2>&1); then
    embedded_lattices=true
  elif [ $lattices = true ]; then
    echo "$0: --lattices true: $why (use --lattices auto or false: 1-best decoding)" >&2; exit 1
  else
    echo "$0: warning: $why: decoding 1-best, and scoring decodes again once per LM weight (as --lattices false)" >&2
    lattices=false  # what score.sh is told: the warning is given once
  fi
fi

mkdir -p "$dir/log"
nj=$("$utils/jobs_for_speakers.sh" "$0" "$data" "$nj")
sdata=$data/split$nj
# split_data.sh does nothing when the split is newer than every file of $data (cmvn.scp
# too, which a test of feats.scp alone missed)
"$utils/split_data.sh" "$data" $nj
echo $nj > "$dir/num_jobs"

forward_opts=(--class-frame-counts="$counts_file" ${prior_scale:+--prior-scale=$prior_scale}
              --transition-model="$model" --device=$device ${chunking:+--chunking=$chunking}
              ${output_rate:+--output-rate=$output_rate} $chain_opt)
# log-likelihoods times post_decode_acwt (only where it is not 1: the command lines stay nnet1's)
awk -v p="$post_decode_acwt" 'BEGIN { exit !(p == 1) }' || forward_opts+=(--loglike-scale=$post_decode_acwt)
latgen_opts=(--min-active=$min_active --max-active=$max_active ${max_mem:+--max-mem=$max_mem}
             --beam=$beam --lattice-beam=$lattice_beam --acoustic-scale=$dec_acwt --allow-partial=true
             --word-symbol-table="$graphdir/words.txt")

# run_jobs <what> <log (with JOB)> <command...>: $cmd JOB=1:$nj; on failure, names the failed
# jobs' logs and shows their last error lines.
run_jobs() {
  local what=$1 log=$2 f failed=
  shift 2
  # shellcheck disable=SC2086
  if $cmd JOB=1:$nj "$log" "$@"; then return 0; fi
  for f in $(seq 1 $nj); do
    f=${log//JOB/$f}
    if [ ! -f "$f" ] || ! grep -q '^# Ended (code 0)' "$f"; then failed="$failed $f"; fi
  done
  echo "$0: $what failed; see the log(s):${failed:- ${log//JOB/*}}" >&2
  for f in $failed; do
    [ -f "$f" ] && grep -v '^#' "$f" | grep -iE 'error|exception|failed' | tail -n 3 | sed "s:^:  $f\: :" >&2 || true
  done
  exit 1
}

if [ $stage -le 0 ]; then
  echo "$0: decoding $data with $nnet$($fuse && echo " + $gmm_dir/final.mdl (weights $net_weight, $gmm_weight)") ($decoder decoder$($embedded_lattices && echo ", lattices"), $nj jobs)"
  # the network's log-likelihoods, or their sum with the GMM's (forward.py's output piped on)
  fused=()
  rm -f "$dir"/gmm_loglikes.*
  if $fuse; then
    run_jobs "the GMM's log-likelihoods" "$dir/log/gmm_likes.JOB.log" \
      gmm_compute_likes.py "${gmm_likes_opts[@]}" "$gmm_dir/final.mdl" "$sdata/JOB" \
        "ark,scp:$dir/gmm_loglikes.JOB.ark,$dir/gmm_loglikes.JOB.scp"
    fused=(ark:- \| matrix_sum.py --scale1=$net_weight --scale2=$gmm_weight ark:- "scp:$dir/gmm_loglikes.JOB.scp")
  fi
  if [ $decoder = kaldi ]; then
    rm -f "$dir"/hyp.*.tra "$dir"/loglikes.*.scp
    # pipefail: a failing forward.py fails the job (latgen-faster-mapped would end quietly)
    run_jobs "decoding" "$dir/log/decode.JOB.log" \
      set -o pipefail \; \
      forward.py "${forward_opts[@]}" "$nnet" "$sdata/JOB" "${fused[@]}" ark:- \| \
      latgen-faster-mapped "${latgen_opts[@]}" "$model" "$graphdir/HCLG.fst" ark:- \
        "ark:|gzip -c > $dir/lat.JOB.gz"
  else
    rm -f "$dir"/lat.*.gz "$dir"/hyp.*.tra
    # (pipefail: a failing forward.py fails the job where matrix_sum.py reads it)
    run_jobs "forward" "$dir/log/forward.JOB.log" set -o pipefail \; \
      forward.py "${forward_opts[@]}" "$nnet" "$sdata/JOB" "${fused[@]}" \
        "ark,scp:$dir/loglikes.JOB.ark,$dir/loglikes.JOB.scp"
    if $embedded_lattices; then
      run_jobs "decoding" "$dir/log/decode.JOB.log" \
        latgen_faster_mapped.py "${latgen_opts[@]}" "$model" "$graphdir/HCLG.fst" \
          "scp:$dir/loglikes.JOB.scp" "ark:|gzip -c > $dir/lat.JOB.gz"
    else
      run_jobs "decoding" "$dir/log/decode.JOB.log" \
        decode_faster_mapped.py --acoustic-scale=$dec_acwt --beam=$beam --max-active=$max_active \
          --min-active=$min_active --word-symbol-table="$graphdir/words.txt" "$model" \
          "$graphdir/HCLG.fst" "scp:$dir/loglikes.JOB.scp" "ark,t:$dir/hyp.JOB.tra"
    fi
  fi
  rm -f "$dir"/gmm_loglikes.*
fi

if [ "$skip_scoring" != true ]; then
  # shellcheck disable=SC2086
  "$steps/score.sh" --beam $beam --max-active $max_active --min-active $min_active \
    --lattices $lattices --ref-normalize $ref_normalize $scoring_opts --cmd "$cmd" \
    --model "$model" "$data" "$graphdir" "$dir"
fi
echo "$0: done decoding $data into $dir"
