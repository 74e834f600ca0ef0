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
run bandit agent=policy ckpt_path=checkpoints/bandit.ckpt
run supervised agent=policy ckpt_path=checkpoints/supervised.ckpt
# the paper's rows with three seeds: trained in the previous world, then in the release's (onpolicy, release_world)
paper_rows="approach supervised reinforce dqn approach_onpolicy reinforce_onpolicy dqn_release_world"
for s in 42 1 2; do
  for m in $paper_rows; do
    run ${m}_seed$s agent=policy ckpt_path=checkpoints/paper/${m}_seed$s.ckpt
  done
done
for m in $paper_rows; do
  run ${m}_ensemble agent=policy "ckpt_path=[checkpoints/paper/${m}_seed42.ckpt,checkpoints/paper/${m}_seed1.ckpt,checkpoints/paper/${m}_seed2.ckpt]"
done
run supervised_release_render agent=policy ckpt_path=checkpoints/paper/supervised_release_render.ckpt  # draws the release's pictures
run approach_release_render agent=policy ckpt_path=checkpoints/paper/approach_release_render.ckpt  # the same
run bandit_ensemble agent=policy "ckpt_path=[$(ls checkpoints/bandit_ensemble/*.ckpt | paste -sd,)]"
run oracle_planner agent=oracle_planner ckpt_path=checkpoints/oracle_planner.ckpt
run distill agent=policy ckpt_path=checkpoints/distill.ckpt
run read_and_plan agent=read_and_plan agent.reader=checkpoints/board_reader.ckpt agent.goal=checkpoints/goal_predictor.ckpt
seven=checkpoints/goal_predictor.ckpt
for g in minilm_seed1 minilm_seed3 minilm_seed4 relabel seed5 norelabel; do seven+=,checkpoints/goal_predictor_$g.ckpt; done
run read_and_plan_seven agent=read_and_plan agent.reader=checkpoints/board_reader.ckpt "agent.goal=[$seven]"
run spo agent=policy ckpt_path=checkpoints/spo.ckpt
run spo_release_world agent=policy ckpt_path=checkpoints/spo_release_world.ckpt
