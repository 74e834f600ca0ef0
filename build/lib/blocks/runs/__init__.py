"""What surrounds a fit and what is done with finished runs (imports :mod:`blocks.learn` and :mod:`blocks.data`).

train      what ``train.py`` runs: check the config, the supervised start, fit, resume, the final evaluation
record     the run's recorded configuration, which a resume continues
callbacks  the progress bar, wall time, a clean stop on SIGTERM or Ctrl-C
export     a checkpoint's weights alone (or the mean of several epochs'), for shipping
keep       a finished run's record, small enough to commit (docs/runs/)
seeds      best of N seeds on the tuning split, and their ensemble
sweep      a Hydra sweep's summary table (the paper's ablations, Figure 4)
"""
