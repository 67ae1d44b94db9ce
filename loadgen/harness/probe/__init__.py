"""`make probe`: how closely each server keeps to HTTP/1.1 (RFC 9112, RFC 9110) and HTTP/2, beside how fast it is.

A benchmark rewards skipping work, and parsing is where skipping is cheapest and least visible; these raw-socket cases
(`cases_*`) say what each server accepts that it must refuse (docs/probe.md)."""
