"""Which servers are up, each ready to measure: a command's session (session.py: starts servers on demand, stops every
one it started, also on Ctrl-C), the harness's lock, a server brought up checked and probed and put down after
(readiness.py, probing.py), the interleaved servers' turns (turns.py), what is up now (inventory.py), whether this
machine has what a plan needs (preflight.py), and which runtime a command uses (runtime_choice.py)."""
