"""What the harness is told: the servers' manifests, the scenarios, the HOSTS roles."""
