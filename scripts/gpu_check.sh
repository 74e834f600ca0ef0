#!/usr/bin/env bash
# A GPU check of the whole package in a few minutes, for a new CUDA install or machine:
#   1. every learner's smoke run (train.py ... experiment=smoke) with trainer=gpu;
#   2. the shipped bandit evaluated on dev on the GPU: compare with the CPU figures in checkpoints/README.md;
#   3. training speeds (python -m blocks.bench train) on this machine.
# Usage: BLOCKS_DATA=/path/to/corpus bash scripts/gpu_check.sh [OUTPUT_DIR]   (ACCELERATOR=cpu DEVICE=cpu to dry-run)
set -uo pipefail
out=${1:-logs/gpu_check}
python=${PYTHON:-python3}
accelerator=${ACCELERATOR:-gpu}
device=${DEVICE:-cuda}
mkdir -p "$out"
"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name())"
status=0
for model in supervised bandit oracle; do
    start=$(date +%s)
    if "$python" train.py model=$model experiment=smoke trainer=$accelerator hydra.run.dir="$out/smoke_$model" \
        > "$out/smoke_$model.log" 2>&1; then
        echo "smoke $model on $accelerator: ok ($(( $(date +%s) - start )) s)"
    else
        echo "smoke $model on $accelerator: FAILED (see $out/smoke_$model.log)"; tail -20 "$out/smoke_$model.log"; status=1
    fi
done
echo "the shipped approach on dev, device $device (checkpoints/README.md has the CPU figures):"
"$python" eval.py agent=policy ckpt_path=checkpoints/paper/approach.ckpt split=dev +agent.device=$device progress=false \
    ${EVAL_LIMIT:+limit=$EVAL_LIMIT} hydra.run.dir="$out/eval_bandit_dev" 2>&1 | tail -1 || status=1
echo "training speeds:"
"$python" -m blocks.bench train --seconds "${BENCH_SECONDS:-20}" 2>&1 | grep -v Warning | tail -4 || status=1
exit $status
