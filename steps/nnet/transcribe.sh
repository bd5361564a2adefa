#!/usr/bin/env bash
# Transcribes recordings with a model dir that steps/nnet/train.sh wrote and a graph dir:
# prints "<id> <words>" per recording (Kaldi's text format) on stdout; with --ctm, word times
# and confidences. No data dir, no feature archive, no Kaldi binary (pybin/transcribe.py).
# CMVN of a lone recording is Kaldi's online CMVN, started from <model-dir>/global_cmvn.stats.

# Begin configuration section.
wav_scp=            # a wav.scp (paths or "cmd |" entries) besides or instead of the files
utt2spk=            # the recordings' speakers: shared CMVN stats (and fMLLR transforms)
ctm=                # write a CTM (<id> 1 <start> <dur> <word> <conf>) here
acwt=0.10           # acoustic scale of the search (decode.sh's)
lm_weight=10        # LM weight of the best path (scoring's LMWT; 10 = 1/acwt: the search's)
word_ins_penalty=0.0
beam=13.0
lattice_beam=8.0
cmvn=auto           # auto|online|utterance|none (transcribe.py --help)
feat_config=        # default: <model-dir>/conf/mfcc.conf or conf/fbank.conf
device=cpu
online=false        # true: streaming, each recording fed in pieces (transcribe.py --online)
piece_seconds=0.1   # --online: seconds of audio a piece
chunking=           # size:step windows of the network (default: the model's training
                    # chunking; transcribe.py --help)
gmm_dir=            # a Kaldi GMM of the network's tree whose log-likelihoods are added (as
gmm_weight=0.5      # decode.sh --gmm-dir; the recipe's decoding of a small dir), at this weight
# End configuration section.

echo "$0 $@" >&2  # Print the command line for logging (stdout is the transcript).

[ -f path.sh ] && . ./path.sh
command -v transcribe.py >/dev/null 2>&1 || . "$(dirname "$0")/../../path.sh"
. "$(dirname "$0")/../../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -lt 2 ] || { [ $# -eq 2 ] && [ -z "$wav_scp" ]; }; then
  cat >&2 <<USAGE
Usage: $0 [options] <model-dir> <graph-dir> [<audio>|- ...]
 ... audio: wav (or flac ...) files, - for wav bytes on stdin, and/or --wav-scp <file>.
 e.g.: $0 --ctm rec.ctm exp/blstm exp/mono/graph rec1.wav rec2.wav > rec.txt
 e.g.: sox in.mp3 -t wav - | $0 exp/blstm exp/mono/graph -
Options:
  --wav-scp <file>             # recordings of a wav.scp (id: its key)
  --utt2spk <file>             # their speakers (CMVN per speaker; a SAT network's fMLLR)
  --ctm <file>                 # word times and confidences
  --acwt <float>               # acoustic scale (default: $acwt)
  --lm-weight <float>          # LM weight of the best path (default: $lm_weight)
  --word-ins-penalty <float>   # (default: $word_ins_penalty)
  --cmvn auto|online|utterance|none  # (default: $cmvn)
  --feat-config <file>         # the training features' conf (default: <model-dir>/conf/)
  --device cpu|cuda|auto       # (default: $device)
  --online true|false          # streaming, in --piece-seconds pieces (default: $online)
  --piece-seconds <float>      # (default: $piece_seconds)
  --chunking <size:step>       # the network's windows (default: the model's training chunking)
  --gmm-dir <dir>              # add this GMM's log-likelihoods (the network's tree; not --online)
  --gmm-weight <float>         # their weight, the network's 1 - it (default: $gmm_weight)
USAGE
  exit 1
fi

model_dir=$1
graph_dir=$2
shift 2

for f in "$model_dir/final.nnet" "$model_dir/final.mdl" "$graph_dir/HCLG.fst" "$graph_dir/words.txt"; do
  [ ! -f "$f" ] && echo "$0: missing file $f" >&2 && exit 1
done

transcribe.py --acwt=$acwt --lm-weight=$lm_weight --word-ins-penalty=$word_ins_penalty \
  --beam=$beam --lattice-beam=$lattice_beam --cmvn=$cmvn --device=$device \
  --online=$online --piece-seconds=$piece_seconds ${chunking:+--chunking=$chunking} \
  ${wav_scp:+--wav-scp="$wav_scp"} ${utt2spk:+--utt2spk="$utt2spk"} ${ctm:+--ctm="$ctm"} ${feat_config:+--feat-config="$feat_config"} \
  ${gmm_dir:+--gmm-dir="$gmm_dir" --gmm-weight=$gmm_weight} \
  "$model_dir" "$graph_dir" "$@"
