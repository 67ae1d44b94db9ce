"""Doing a run: session, verification, campaign, warm-ups and attempts, the tool runner, the machine's steadiness, the run's life."""
