"""The paired comparison the protocol names: ``python -m blocks.report.compare`` under its older path.

python scripts/compare_episodes.py logs/eval/runs/<a>/episodes.csv logs/eval/runs/<b>/episodes.csv
"""

from blocks.report.compare import main

if __name__ == "__main__":
    main()
