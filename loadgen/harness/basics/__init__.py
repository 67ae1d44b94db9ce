"""Leaves every other layer may use: messages, interrupts, this machine, CPU lists, an HTTP client, statistics, trends, process sampling."""
