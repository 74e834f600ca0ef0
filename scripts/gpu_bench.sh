#!/usr/bin/env bash
# The GPU rollout path (data.simulator=torch) on a GPU machine, every figure written to OUTPUT_DIR as it comes:
#   1. the torch world against the numpy reference on the GPU (tests/test_tensor_world.py runs cuda cases too);
#   2. the world alone (python -m blocks.bench env): transitions and pictures per second on the GPU;
#   3. the bandit's training frames/s (python -m blocks.bench train): numpy rollouts at batch 32 (today's path),
#      then torch rollouts at growing batches, 16 episodes per update in one backward pass, and the peak GPU memory;
#   4. SPO (model=spo) with torch rollouts of 256 examples a batch (--spo; the bandit figure at that batch too).
# Usage: BLOCKS_DATA=/path/to/corpus bash scripts/gpu_bench.sh [OUTPUT_DIR]
set -uo pipefail
out=${1:-logs/gpu_bench}
python=${PYTHON:-python3}
seconds=${BENCH_SECONDS:-20}
mkdir -p "$out"
"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name())" | tee "$out/device.txt"
"$python" -m pytest -q tests/test_tensor_world.py > "$out/tests.txt" 2>&1; tail -1 "$out/tests.txt"
"$python" -m blocks.bench env --seconds 5 2>&1 | grep -v Warn > "$out/env.txt"; head -1 "$out/env.txt"
"$python" -m blocks.bench train --skip-supervised --seconds "$seconds" --accelerator gpu 2>&1 | grep -v Warn \
    > "$out/train_numpy_32.txt"; tail -1 "$out/train_numpy_32.txt"
for batch in ${BATCHES:-128 512 1024}; do
    "$python" -m blocks.bench train --skip-supervised --seconds "$seconds" --accelerator gpu --simulator torch \
        --batch "$batch" --episodes-per-update 16 --chunks-per-update 1 2>&1 | grep -v Warn > "$out/train_torch_$batch.txt"
    tail -1 "$out/train_torch_$batch.txt"
done
"$python" -m blocks.bench train --skip-supervised --spo --seconds "$seconds" --accelerator gpu --simulator torch \
    --batch 256 --episodes-per-update 16 --chunks-per-update 1 2>&1 | grep -v Warn > "$out/train_spo_256.txt"
tail -1 "$out/train_spo_256.txt"
