#!/usr/bin/env bash
# The GPU rollout path (data.simulator=torch) on a GPU machine, every figure written to OUTPUT_DIR as it comes,
# the headline figures first (a command cut off at its time limit keeps what it measured):
#   0. the paper's approach trained on-policy for APPROACH_SECONDS (default 600; 0 skips it) from the 2-epoch
#      supervised start, torch rollouts of APPROACH_BATCH episodes (256) a single Adam step at APPROACH_LR (0.008,
#      the CPU probe's linear scaling of the paper's 0.00025 at 8 episodes; docs/experiments/gpu-rollouts.md),
#      validated on tune every epoch; the tune-best checkpoint's dev row in approach.txt, the curve in
#      approach/csv (written as it trains);
#   1. the bandit's training frames/s with torch rollouts at growing batches (python -m blocks.bench train
#      --simulator torch), one update per rollout in one backward pass, and the peak GPU memory at each;
#   2. the same machine's numpy path at batch 32 (today's default), supervised and bandit, for the speed-up;
#   3. SPO (model=spo) with torch rollouts of 256 examples a batch;
#   4. the torch world against the numpy reference on the GPU (tests/test_tensor_world.py runs cuda cases too);
#   5. the world alone (python -m blocks.bench env): transitions and pictures per second on the GPU;
#   (after 2) the same with bf16 autocast and the compiled CNN (--precision bf16-mixed --compile).
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
    timeout "$limit" "$@" 2>&1 | grep --line-buffered -v Warn > "$out/$name.txt"
    local status=${PIPESTATUS[0]}
    local figures; figures=$(grep '^{' "$out/$name.txt" | tail -1)
    [ -n "$figures" ] && echo "{\"step\": \"$name\", \"figures\": $figures}" >> "$out/summary.jsonl"
    echo "$name (exit $status): $(grep -E 'frames/s|GiB|passed|failed|transitions/s|Error' "$out/$name.txt" | tr '\n' ' ')"
}

"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name())" | tee "$out/device.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$out/device.txt" 2>&1
nproc >> "$out/device.txt"
seconds_approach=${APPROACH_SECONDS:-600}
if [ "$seconds_approach" -gt 0 ]; then
    limit_others=$limit; limit=$(( seconds_approach + ${APPROACH_SLACK:-240} ))
    step approach "$python" train.py experiment=paper_bandit trainer="$accelerator" data.simulator=torch \
        data.batch_size="${APPROACH_BATCH:-256}" model.lr="${APPROACH_LR:-0.008}" \
        pretrain.checkpoint=checkpoints/paper/supervised_start.ckpt trainer.max_epochs=1000 \
        "+trainer.max_time='$(printf '00:%02d:%02d:%02d' $((seconds_approach / 3600)) $((seconds_approach % 3600 / 60)) $((seconds_approach % 60)))'" ${APPROACH_OVERRIDES:-} hydra.run.dir="$out/approach"
    grep -E '^\| (model|bandit) ' "$out/approach.txt"
    limit=$limit_others
fi
for batch in ${BATCHES:-512 1024 2048 128}; do
    step "train_torch_$batch" "$python" -m blocks.bench train --skip-supervised --seconds "$seconds" --accelerator "$accelerator" \
        --simulator torch --batch "$batch" --chunks-per-update 1
done
step train_numpy_32 "$python" -m blocks.bench train --seconds "$seconds" --accelerator "$accelerator"
# the engine's options on the same machine: bf16 autocast and the compiled CNN, torch rollouts of 512
step train_torch_512_bf16_compile "$python" -m blocks.bench train --seconds "$seconds" --accelerator "$accelerator" \
    --simulator torch --batch 512 --chunks-per-update 1 --precision bf16-mixed --compile
step train_spo_256 "$python" -m blocks.bench train --skip-supervised --spo --seconds "$seconds" --accelerator "$accelerator" \
    --simulator torch --batch 256 --chunks-per-update 1
step tests "$python" -m pytest -q -p no:cacheprovider tests/test_tensor_world.py
step env "$python" -m blocks.bench env --seconds 5
