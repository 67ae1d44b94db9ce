"""Every run on one timeline (`make history`): the figures of each server, scenario and run across run folders, the
machine's own speed beside them, the changes found in them (E-divisive means) and what changed then."""
