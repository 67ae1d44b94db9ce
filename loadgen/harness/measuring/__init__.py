"""How fast? The bench's run, in its flow: the campaign (campaign.py), the plan (run_plan.py) and its clock (clock.py),
the rounds (scheduler.py) through an executor (executor.py) and a judge (judging/referee.py), the tool processes and
their deadlines, warm-ups, the forecast, the machine's steadiness, the run's life."""
