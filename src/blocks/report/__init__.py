"""What is done with finished runs, each tool a command: ``python -m blocks.report.<tool>``.

compare  two evaluations of one split, paired: the mean difference with a bootstrap over board sequences
curves   learning curves from runs' CSV logs
early_stop  what an early stop on the tuning split would have picked from finished runs' curves
sweep    a Hydra sweep's summary table (the paper's ablations, Figure 4)
seeds    best of N seeds on the tuning split, and their ensemble
keep     a finished run's record, small enough to commit (docs/runs/)
export   a checkpoint's weights alone (or the mean of several epochs'), for shipping
paper    the paper's own figures, for the rows and plots that stand beside ours

It reads runs and checkpoints and never trains: it imports nothing of :mod:`blocks.runs` or :mod:`blocks.learn`.
"""
