"""The fit and what surrounds it (imports :mod:`blocks.learn` and :mod:`blocks.data`); what is done with finished
runs is :mod:`blocks.report`.

train       what ``train.py`` runs: check the config, the supervised start, fit, resume, the final evaluation
eval        what ``eval.py`` runs: check the config, build the agent, evaluate, save
record      the run's recorded configuration, which a resume continues
resume      the checkpoint a resume starts from, and the mid-epoch position
pretrain    the supervised start a learner may begin from
final_eval  the tune-best checkpoint evaluated on the split the config names
callbacks   the progress bar, wall time, a clean stop on SIGTERM or Ctrl-C
"""
