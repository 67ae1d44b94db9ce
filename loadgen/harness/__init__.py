"""The benchmark harness: builds, starts, verifies and measures the servers of this repository."""
