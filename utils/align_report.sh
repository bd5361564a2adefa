#!/usr/bin/env bash
# Sums the per-job reports of an alignment dir (<ali-dir>/log/align_report.JOB.json, written by
# align_mapped.py for steps/nnet/align.sh and steps/align_si.sh) into one line, as <caller> says
# it: utterances aligned, frames, failed (both beams), without transcript, OOV words.
# e.g.: utils/align_report.sh steps/align_si.sh exp/mono_ali
if [ $# -ne 2 ]; then
  echo "Usage: $0 <caller> <ali-dir>" >&2
  echo " e.g.: $0 steps/align_si.sh exp/mono_ali" >&2
  exit 1
fi
caller=$1
dir=$2
set -euo pipefail
utts=0; aligned=0; failed=0; no_text=0; oov=0; frames=0
for n in $(seq "$(cat "$dir/num_jobs")"); do
  read -r -d '' u a f t o fr <<< "$(json_get.py "$dir/log/align_report.$n.json" utterances \
    aligned num_failed num_no_transcript oov_words frames)" || true
  utts=$((utts + u)); aligned=$((aligned + a)); failed=$((failed + f))
  no_text=$((no_text + t)); oov=$((oov + o)); frames=$((frames + fr))
done
echo "$caller: aligned $aligned of $utts utterances ($frames frames) into $dir; $failed failed" \
     "(not aligned within the beams), $no_text without transcript; $oov transcript words mapped to the OOV word" \
     "(per job: $dir/log/align_report.JOB.json)"
