"""The sampler on a real process: its CPU seconds, its peak memory, and the once-a-second memory timeline that shows
whether a server grows during a long run."""
from __future__ import annotations

import subprocess
import sys
import time

from harness.basics.sampling import ProcessSampler

# grows by about 20 MB every 0.5 s, busy in between
GROWER = """
import time
hold, end = [], time.time() + 10
while time.time() < end:
    hold.append(bytearray(20 * 2**20))
    stop = time.time() + 0.5
    while time.time() < stop:
        pass
"""


def test_memory_timeline_shows_a_growing_process():
    proc = subprocess.Popen([sys.executable, "-c", GROWER])
    try:
        time.sleep(0.3)
        sampler = ProcessSampler(lambda: [proc.pid], cores=1).start()
        time.sleep(3.2)
        result = sampler.stop()
    finally:
        proc.kill()
        proc.wait()
    timeline = result["rss_mb_timeline"]
    assert len(timeline) >= 3 and [t for t, _ in timeline] == sorted(t for t, _ in timeline)
    assert timeline[-1][1] - timeline[0][1] > 60  # ~120 MB added over 3 s
    assert result["peak_rss_mb"] >= timeline[-1][1]
    assert result["cpu_s"] > 1.0  # busy between allocations
