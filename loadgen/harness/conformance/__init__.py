"""Is the server right? The contract check every server passes before it is measured (verification.py,
verification_h2c.py, contract_table.py), and `make probe`: how closely each keeps to HTTP/1.1 (RFC 9112, RFC 9110)
and HTTP/2, from raw-socket cases (`cases_*`, sent by wire.py and read by basics/http1.py; docs/probe.md) and h2spec
(h2c.py, its malformed requests' failures sent again by h2c_replay.py), kept per build (compliance_cache.py).

A benchmark rewards skipping work, and parsing is where skipping is cheapest and least visible: these cases say what
each server accepts that it must refuse."""
