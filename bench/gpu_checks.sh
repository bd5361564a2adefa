#!/usr/bin/env bash
# The CUDA, NCCL and bf16 paths on one GPU machine, in one go: the gpu-marked tests, the default
# recipe on kaldi_digits trained and decoded on the GPU (fp32; bf16 autocast; one torchrun
# process in an NCCL group with --parallel average), the GPU section of experiments.scale
# (ours against a bare cuDNN loop, fp32 and bf16) and the den forward-backward on CUDA.
# Every part runs even if an earlier one failed; results (JSON lines, logs) go to $OUT as each
# part ends, the benchmarks first (the recipes take minutes: give the call 10).
#
# usage: bench/gpu_checks.sh <kaldi_digits dir> <dir with exp/tri1 (tree, final.mdl, ali.1.gz)>
# e.g.:  OUT=/tmp/gpu bench/gpu_checks.sh ../shared/data/kaldi_digits ../shared/data/kaldi_polish
# Wheels of the Kaldi packages in .whl/ (if any) are installed into /tmp/site first.
set -uo pipefail
if [ $# -ne 2 ]; then sed -n 2,9p "$0" >&2; exit 1; fi
root=$(cd -P "$(dirname "$0")/.." && pwd -P)
digits=$(cd "$1" && pwd -P); tri1dir=$(cd "$2" && pwd -P)
OUT=${OUT:-/tmp/gpu_checks}; mkdir -p "$OUT"
log=$OUT/gpu_checks.log
exec > >(tee -a "$log") 2>&1
cd "$root"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
part() { echo "=== $(date +%T) $*"; }

part machine
nvidia-smi -L; nproc
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  torch.cuda.get_device_name(0), "bf16", torch.cuda.is_bf16_supported(),
  "nccl", torch.distributed.is_nccl_available())'
python3 -c 'from hybridasr.decode import native; print("C++ library", native.build())'

part experiments.scale, the GPU section
timeout -k 10 200 python3 -m experiments.scale --sizes 10000 --stages import,gpu \
  --write-doc "$OUT/performance_gpu.md" > "$OUT/scale_gpu.jsonl"; echo "rc $?"
cat "$OUT/scale_gpu.jsonl"

part den forward-backward on CUDA, polish tri1 den graph
for b in 32 128; do
  timeout 60 python3 bench/chain_den.py "$tri1dir" exp/tri1 $b 50 cuda
done | tee "$OUT/chain_den_cuda.jsonl"
part gpu-marked tests and device-aware test files
files=$(ls tests/test_chain_objective.py tests/test_option_spellings.py tests/test_models_*.py 2>/dev/null)
timeout 120 python3 -m pytest -q -n 4 -p no:cacheprovider $files 2>&1 | tail -25

part the recipe on kaldi_digits on the GPU: fp32, bf16, NCCL group of one
recipe() {  # <name> <run.sh options...>
  local name=$1; shift
  rm -rf "egs/digits/$name"; mkdir -p "egs/digits/$name"
  cp -a egs/digits/s5/{run.sh,cmd.sh,path.sh,conf,steps,utils} "egs/digits/$name/"
  # -k: run.sh waits for its jobs on SIGTERM; a job stuck on the GPU must not hold the rest
  (cd "egs/digits/$name" && t0=$SECONDS && timeout -k 20 240 ./run.sh \
     --kaldi-dir "$digits" --device cuda "$@" > run.log 2>&1
   echo "$name rc $? wall $((SECONDS - t0)) s" >> run.log
   cp run.log "$OUT/$name.log"  # at once: a later part that hangs must not lose it
   echo "--- $name"; grep -E "WER|rc [0-9]|rror|backend" run.log | tail -8)
}
recipe gpu_fp32
recipe gpu_bf16 --train-opts "--amp=bf16"
recipe gpu_nccl --torchrun-opts "--standalone" --parallel average
wait
tar czf "$OUT/recipes.tgz" egs/digits/gpu_*/run.log egs/digits/gpu_*/exp/*/metrics.jsonl \
  egs/digits/gpu_*/exp/*/log/train*.log 2>/dev/null

part done
