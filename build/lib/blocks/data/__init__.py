"""The data the learners learn from, one module per ``conf/data/`` option (never importing the learners).

base           the shared DataModule: corpus, vocabulary, tuning split, a resumable epoch order sharded by rank
demonstrations ``data=demonstrations``: (context, action) pairs along the demonstrations
rollouts       ``data=rollouts``: on-policy rollouts of the current policy (numpy or torch world)
rollout        collecting one rollout, and what an update reads from it
episodes       ``data=episodes``: examples the learner rolls out itself (SPO)
goals          ``data=goals``: words and boards for the goal predictor; relabel: its label-swapping copies
boards         ``data=boards``: drawn boards for the board reader
"""
