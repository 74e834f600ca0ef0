#!/usr/bin/env bash
# The GPU rollout path (data.simulator=torch) on a GPU machine, every figure written to OUTPUT_DIR as it comes,
# the headline figures first (a command cut off at its time limit keeps what it measured):
#   1. the bandit's training frames/s with torch rollouts at growing batches (python -m blocks.bench train
#      --simulator torch), one update per rollout in one backward pass, and the peak GPU memory at each;
#   2. the same machine's numpy path at batch 32 (today's default), supervised and bandit, for the speed-up;
#   3. SPO (model=spo) with torch rollouts of 256 examples a batch;
#   4. the torch world against the numpy reference on the GPU (tests/test_tensor_world.py runs cuda cases too);
#   5. the world alone (python -m blocks.bench env): transitions and pictures per second on the GPU.
# Every step has a time limit (STEP_LIMIT seconds); one that hangs or fails does not stop the others.
# summary.jsonl gathers each benchmark's JSON line, tagged with its step.
# Usage: BLOCKS_DATA=/path/to/corpus bash scripts/gpu_bench.sh [OUTPUT_DIR]
set -uo pipefail
out=${1:-logs/gpu_bench}
python=${PYTHON:-python3}
seconds=${BENCH_SECONDS:-20}
limit=${STEP_LIMIT:-150}
accelerator=${ACCELERATOR:-gpu}  # cpu: a dry run of the script here
mkdir -p "$out"

step() {  # step NAME COMMAND...: run under the time limit, keep its output in NAME.txt, its JSON in summary.jsonl
    local name=$1; shift
    timeout "$limit" "$@" 2>&1 | grep -v Warn > "$out/$name.txt"
    local status=${PIPESTATUS[0]}
    local figures; figures=$(grep '^{' "$out/$name.txt" | tail -1)
    [ -n "$figures" ] && echo "{\"step\": \"$name\", \"figures\": $figures}" >> "$out/summary.jsonl"
    echo "$name (exit $status): $(grep -E 'frames/s|GiB|passed|failed|transitions/s|Error' "$out/$name.txt" | tr '\n' ' ')"
}

"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name())" | tee "$out/device.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$out/device.txt" 2>&1
nproc >> "$out/device.txt"
for batch in ${BATCHES:-512 1024 2048 128}; do
    step "train_torch_$batch" "$python" -m blocks.bench train --skip-supervised --seconds "$seconds" --accelerator "$accelerator" \
        --simulator torch --batch "$batch" --chunks-per-update 1
done
step train_numpy_32 "$python" -m blocks.bench train --seconds "$seconds" --accelerator "$accelerator"
step train_spo_256 "$python" -m blocks.bench train --skip-supervised --spo --seconds "$seconds" --accelerator "$accelerator" \
    --simulator torch --batch 256 --chunks-per-update 1
step tests "$python" -m pytest -q -p no:cacheprovider tests/test_tensor_world.py
step env "$python" -m blocks.bench env --seconds 5
