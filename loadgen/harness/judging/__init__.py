"""What a run's records say, by harness.stats' rules: a run's noise (noise.py), its rounds' pairs and trends
(round_pairs.py, round_trend.py), the order (ranking.py, endpoint_ranking.py), what a run can tell apart
(resolution.py), each record's flags and capacity (flags.py, capacity.py), and what the rounds ask while they
measure (referee.py, more_rounds.py)."""
