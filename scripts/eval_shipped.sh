#!/usr/bin/env bash
# Every shipped checkpoint evaluated on dev (one torch thread, niced below training runs): scripts/eval_shipped.sh [out]
set -u
cd "$(dirname "$0")/.."
source .venv/bin/activate  # make install
export BLOCKS_TORCH_THREADS=1
out=${1:-logs/release-world/eval}
run() {  # name, then eval.py overrides
  local name=$1; shift
  [ -f "$out/$name/metrics.json" ] && return
  nice -n "${NICE:-10}" python eval.py split=dev progress=false "hydra.run.dir=$out/$name" "$@" > "$out/$name.log" 2>&1
}
mkdir -p $out
run stop agent=stop
run random agent=random
run demonstrations agent=demonstrations
# the paper's rows (a network trained on the release's pictures records them: evaluation draws them)
for row in approach approach_release_pictures supervised_release_pictures reinforce dqn spo supervised_start_release_pictures; do
  run $row agent=policy ckpt_path=checkpoints/paper/$row.ckpt
done
run oracle_planner agent=oracle_planner ckpt_path=checkpoints/paper/oracle_planner.ckpt
# ours: read and plan with the default goal network, then with the seven
run read_and_plan agent=read_and_plan
run read_and_plan_seven agent=read_and_plan "agent.goal=[$(ls checkpoints/ours/goal_predictor*.ckpt | paste -sd,)]"
