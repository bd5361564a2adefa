#!/usr/bin/env bash
# Imports the alignments of a Kaldi GMM system (exp/tri3_ali: final.mdl, ali.*.gz, num_jobs)
# as frame-level training targets for a hybrid network, the way Kaldi nnet1 uses them
# (ali-to-pdf + analyze-counts), with the feature/alignment length check of nnet1's
# --length-tolerance: targets longer than the features are cut to them, shorter ones kept (the
# trainer trims the features to them, as nnet1 trims both). Writes into <dir>:
# targets.ark/targets.scp (pdf-ids, binary int32 vectors), target_lengths (utt2num_frames
# format), pdf_counts (Kaldi's ali_train_pdf.counts), num_pdfs, copies of final.mdl,
# tree, phones.txt, and import_report.json; nothing partial is left in <dir> on failure.
# Labels are not delayed here: use the trainer's --label-delay (stored with the model, undone
# at decoding).

# Begin configuration section.
cmd=run.pl
length_tolerance=    # keep an utterance when |aligned - feature frames| < this; trim to the shorter
                     # (empty: import_alignments.py's default, nnet1's 5)
label_delay=0        # only 0: delay labels with the trainer's --label-delay instead
lang=                # a lang dir the ali dir must fit (its phones.txt and final.mdl's phones)
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v import_alignments.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <ali-dir> <data-dir> <dir>
 e.g.: $0 exp/tri3_ali data/train exp/tri3_ali_targets
Options:
  --cmd <run.pl|queue.pl ...>     # how to run the job (default: $cmd)
  --length-tolerance <frames>     # alignment/feature length tolerance (default: that of
                                  # import_alignments.py --help, nnet1's 5)
  --lang <lang-dir>               # check that the alignments fit this lang dir's phones.txt
                                  # (default: only the ali dir's own phones.txt is checked)
  --label-delay 0                 # accepted for old scripts; a delay is a training option:
                                  # steps/nnet/train.sh --train-opts "--label-delay=N"
USAGE
  exit 1
fi

alidir=$1
data=$2
dir=$3

if [ "$label_delay" != 0 ]; then
  echo "$0: --label-delay $label_delay: labels are no longer delayed at import (decoding could" \
       "not undo it); import without it and train with --label-delay=$label_delay" \
       "(steps/nnet/train.sh --train-opts \"--label-delay=$label_delay\"), which the model" \
       "stores and decoding undoes" >&2
  exit 1
fi

for f in "$alidir/final.mdl" "$alidir/num_jobs"; do
  [ ! -f "$f" ] && echo "$0: no such file $f" >&2 && exit 1
done
nj=$(cat "$alidir/num_jobs")
for n in $(seq "$nj"); do
  [ ! -f "$alidir/ali.$n.gz" ] && echo "$0: no such file $alidir/ali.$n.gz" >&2 && exit 1
done
if [ ! -f "$data/utt2num_frames" ] && [ ! -f "$data/feats.scp" ]; then
  echo "$0: $data has neither utt2num_frames nor feats.scp" >&2
  exit 1
fi

mkdir -p "$dir/log"

opts=()
[ -n "$length_tolerance" ] && opts+=("--length-tolerance=$length_tolerance")
if [ -n "$lang" ]; then
  [ ! -f "$lang/phones.txt" ] && echo "$0: no such file $lang/phones.txt (--lang)" >&2 && exit 1
  opts+=("--lang=$lang")
fi
$cmd "$dir/log/import_ali.log" \
  import_alignments.py "${opts[@]}" \
    "$alidir" "$data" "$dir" \
  || { echo "$0: error importing alignments; see $dir/log/import_ali.log:" >&2;
       grep -E "ERROR|Error|error" "$dir/log/import_ali.log" | tail -n 3 >&2 || true; exit 1; }

counts=$(json_get.py "$dir/import_report.json" utterances_imported frames_imported num_pdfs \
  dropped_over_tolerance alignment_without_features features_without_alignment length_tolerance)
read -r -d '' utts frames num_pdfs dropped no_feats no_ali length_tolerance <<< "$counts" || true
echo "$0: imported $utts utterances ($frames frames, $num_pdfs pdfs) from $alidir into $dir"
if [ $((dropped + no_feats + no_ali)) -gt 0 ]; then
  echo "$0: left out: $dropped alignments $length_tolerance or more frames off the features," \
       "$no_feats alignments without features, $no_ali utterances without an alignment" \
       "(examples in $dir/import_report.json)"
fi
