"""Leaves every other layer may use: messages, interrupts, this machine, CPU lists, the one HTTP/1 response reader and
a client over it, latency distributions, process sampling."""
