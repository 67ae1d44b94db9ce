"""`make calibrate`: every load tool against the calibrated server, each load's answers known in advance, measured like
a bench's (harness.measuring's campaign) and judged figure by figure (calibration.py; the plan: loadgen/calibrate.toml)."""
