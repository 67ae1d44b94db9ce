"""Which servers are up, and where: a command's session (session.py: starts servers on demand, stops every one it
started, also on Ctrl-C), the harness's lock, what is up now (inventory.py), whether this machine has what a plan
needs (preflight.py), and which runtime a command uses (runtime_choice.py)."""
