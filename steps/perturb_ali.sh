#!/usr/bin/env bash
# Training targets for a speed-perturbed data dir (utils/data/perturb_data_dir_speed_3way.sh),
# without realigning it: from the import dir of the unperturbed data (steps/import_ali.sh),
# each sp<F>-<utt> copy gets <utt>'s frame-level pdf alignment resampled to the copy's feature
# frame count (hybridasr.align.speed_perturb); the unperturbed utterances keep theirs. Writes
# the same files as steps/import_ali.sh into <dir> (targets.ark/scp, target_lengths,
# pdf_counts of all copies, num_pdfs, final.mdl, tree, phones.txt, import_report.json), which
# steps/nnet/train.sh reads as its <ali-train>. A copy whose feature frames are more than
# --max-mismatch off its original's frames / F is an error naming it.

# Begin configuration section.
cmd=run.pl
max_mismatch=        # empty: perturb_alignments.py's default (2 frames)
length_tolerance=    # for the unperturbed utterances (empty: the default, nnet1's 5)
src_data=            # the unperturbed data dir, when <data-dir> does not hold the originals
# End configuration section.

echo "$0 $@"  # Print the command line for logging.

[ -f path.sh ] && . ./path.sh
command -v perturb_alignments.py >/dev/null 2>&1 || . "$(dirname "$0")/../path.sh"
. "$(dirname "$0")/../utils/parse_options.sh" || exit 1

set -euo pipefail

if [ $# -ne 3 ]; then
  cat >&2 <<USAGE
Usage: $0 [options] <src-ali-dir> <data-dir> <dir>
 e.g.: $0 exp/ali_train data/train_sp exp/ali_train_sp
Options:
  --cmd <run.pl|queue.pl ...>     # how to run the job (default: $cmd)
  --max-mismatch <frames>         # perturbed frames vs original frames / factor (default: 2)
  --length-tolerance <frames>     # the unperturbed utterances' (default: nnet1's 5)
  --src-data <data-dir>           # the unperturbed data dir (default: <data-dir>, which
                                  # holds the originals in a 3-way dir)
USAGE
  exit 1
fi

srcali=$1
data=$2
dir=$3

for f in "$srcali/targets.scp" "$srcali/num_pdfs"; do
  [ ! -f "$f" ] && echo "$0: no such file $f (make it with steps/import_ali.sh)" >&2 && exit 1
done
if [ ! -f "$data/utt2num_frames" ] && [ ! -f "$data/feats.scp" ]; then
  echo "$0: $data has neither utt2num_frames nor feats.scp (make its features first)" >&2
  exit 1
fi

mkdir -p "$dir/log"
opts=()
[ -n "$max_mismatch" ] && opts+=("--max-mismatch=$max_mismatch")
[ -n "$length_tolerance" ] && opts+=("--length-tolerance=$length_tolerance")
[ -n "$src_data" ] && opts+=("--src-data=$src_data")
$cmd "$dir/log/perturb_ali.log" \
  perturb_alignments.py ${opts[@]+"${opts[@]}"} "$srcali" "$data" "$dir" \
  || { echo "$0: error making the targets; see $dir/log/perturb_ali.log:" >&2;
       grep -E "ERROR|Error|error" "$dir/log/perturb_ali.log" | tail -n 3 >&2 || true; exit 1; }

counts=$(json_get.py "$dir/import_report.json" utterances frames unperturbed perturbed \
  without_alignment max_mismatch_seen)
read -r -d '' utts frames unpert pert noali mism <<< "$counts" || true
echo "$0: $utts utterances ($frames frames) of $data into $dir: $unpert unperturbed," \
  "$pert resampled (at most $mism frames off original/factor); $noali without an alignment"
