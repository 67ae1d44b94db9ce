"""A whole latency distribution: an HdrHistogram of request latencies in microseconds, stored as its base64 log form.

Why HdrHistogram: it is the field's standard (wrk2, Gatling, HdrHistogram's own plotter read it), two histograms of
the same shape add up exactly (`merged`), so the parts of one attempt and the attempts of one record pool without
losing anything, and its encoded form (V2 log format, zlib, base64) is a few KB however many requests it holds.

Shape: values 1 µs to one hour, SIGNIFICANT_DIGITS = 4: every value up to 32,767 µs is kept to the microsecond, larger
ones to within 1/16,384 of themselves (at 100 ms: 4 µs). A percentile read here is the nearest-rank value of the
recorded latencies: the value at rank int(p/100 · n + 0.5) (at least 1), HdrHistogram's own rule, read here with
numpy over the histogram's counts (the library's own reader walks its 311,296 buckets in Python: 0.5 s a percentile).
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped]

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_DIGITS = 4
PERCENTILES = (50.0, 90.0, 99.0, 99.9)  # the ones a record's latency_ms names ("p50" ... "p99.9")
# a histogram of this shape holds 311,296 counts; at most 9 bytes each as varints, past a 40-byte header
MAX_DECODED_BYTES = 40 + 9 * 311_296
MAX_ENCODED_CHARS = 4 * MAX_DECODED_BYTES  # base64 of zlib of that, with room: a real one is a few KB
EXTERNAL_HEADER = struct.Struct(">II")  # compression cookie, compressed length
PAYLOAD_HEADER = struct.Struct(">IIIIQQd")  # cookie, length, offset, digits, lowest, highest, conversion ratio
COMPRESSION_COOKIE_BASE, ENCODING_COOKIE_BASE = 0x1C849304, 0x1C849303


def _empty() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def key(percentile: float) -> str:
    """ "p50", "p99.9": a percentile's name in latency_ms."""
    return f"p{percentile:g}"


class Distribution:
    """The latencies of a set of requests (one tool process, one attempt, or a record's attempts together)."""

    def __init__(self, histogram: HdrHistogram) -> None:
        self._histogram = histogram

    @classmethod
    def from_counts(cls, counts_us: Mapping[int, int]) -> Distribution:
        """From {latency in µs: requests}; a latency below 1 µs counts as 1 µs (the histogram's lowest)."""
        histogram = _empty()
        for us, count in counts_us.items():
            if count > 0:
                histogram.record_value(min(max(int(us), LOWEST_US), HIGHEST_US), int(count))
        return cls(histogram)

    @classmethod
    def from_levels(
        cls, levels: Iterable[tuple[float, int]], requests: int, slowest_us: Sequence[int] = ()
    ) -> Distribution | None:
        """From a tool's quantile function: (percent, µs) levels in rising order, the last one 100 (the max), over
        `requests` requests. The requests up to each level's rank not yet counted are put at that level's latency,
        so percentiles at the levels are the tool's own and between two levels an upper bound. `slowest_us`: the
        slowest requests' own latencies where the tool gives them (ab's -g), each counted at its value in place of
        what the levels say of the last len(slowest_us) ranks. None without levels or requests."""
        counts: dict[int, int] = {}
        counted = 0
        below = requests - len(slowest_us)
        for pct, us in levels:
            upto = min(
                requests if pct >= 100 else int(requests * pct / 100 + 0.5), below
            )  # the rank percentile_ms reads
            if upto > counted:
                counts[int(us)] = counts.get(int(us), 0) + upto - counted
                counted = upto
        for us in slowest_us:
            counts[int(us)] = counts.get(int(us), 0) + 1
            counted += 1
        return cls.from_counts(counts) if counted else None

    @classmethod
    def decode(cls, encoded: str) -> Distribution:
        """From `encode`'s text (results.json's `latency_histogram`); ValueError for text that is not one of this
        shape (`problem`), before anything is decompressed past its bound or allocated by its header's word."""
        wrong = problem(encoded)
        if wrong:
            raise ValueError(f"latency histogram {wrong}")
        return cls(HdrHistogram.decode(encoded.encode("ascii")))

    @classmethod
    def merged(cls, parts: Iterable[Distribution]) -> Distribution:
        """Every request of every part, exactly: the sum of their counts."""
        histogram = _empty()
        for part in parts:
            histogram.add(part._histogram)
        return cls(histogram)

    def encode(self) -> str:
        """HdrHistogram's V2 compressed form in base64 ("HISTF..."), what any HdrHistogram library decodes."""
        encoded: bytes = self._histogram.encode()
        return encoded.decode("ascii")

    @property
    def count(self) -> int:
        return int(self._histogram.get_total_count())

    def percentile_ms(self, percentile: float) -> float:
        """The latency (ms) under which `percentile` % of the requests were served (nearest rank)."""
        return self._values_us([percentile])[0] / 1000

    def _values_us(self, percentiles: list[float]) -> list[int]:
        """The latency (µs, the highest value of its bucket) at each of `percentiles`, in one pass over the counts."""
        histogram = self._histogram
        total = self.count
        cumulative = np.cumsum(np.ctypeslib.as_array(histogram.counts))
        out = []
        for percentile in percentiles:
            rank = max(int(min(percentile, 100.0) * total / 100 + 0.5), 1)
            index = int(np.searchsorted(cumulative, rank))
            out.append(int(histogram.get_highest_equivalent_value(histogram.get_value_from_index(index))))
        return out

    def _recorded(self) -> list[tuple[int, int]]:
        """(bucket index, requests) of the buckets that hold requests, found with numpy."""
        counts = np.ctypeslib.as_array(self._histogram.counts)
        return [(int(i), int(counts[i])) for i in np.flatnonzero(counts)]

    def max_ms(self) -> float:
        recorded = self._recorded()
        if not recorded:
            return 0.0
        histogram = self._histogram
        return int(histogram.get_highest_equivalent_value(histogram.get_value_from_index(recorded[-1][0]))) / 1000

    def mean_ms(self) -> float:
        """The mean, each bucket's requests taken at its middle value (HdrHistogram's rule: exact to the µs up to
        32,767 µs)."""
        histogram = self._histogram
        total = 0
        for index, requests in self._recorded():
            value = histogram.get_value_from_index(index)
            low, high = (
                int(histogram.get_lowest_equivalent_value(value)),
                int(histogram.get_highest_equivalent_value(value)),
            )
            total += requests * (low + (high - low + 1) // 2)
        return round(total / self.count / 1000, 3) if self.count else 0.0

    def latency_ms(self) -> dict[str, float | None]:
        """p50, p90, p99, p99.9, max and mean in ms; all None when it holds no request."""
        if not self.count:
            return {**dict.fromkeys(key(p) for p in PERCENTILES), "max": None, "mean": None}
        values = self._values_us(list(PERCENTILES))
        return {
            **{key(p): us / 1000 for p, us in zip(PERCENTILES, values)},
            "max": self.max_ms(),
            "mean": self.mean_ms(),
        }

    def spectrum(self, ticks_per_half: int = 5) -> list[tuple[float, float]]:
        """(percentile, ms) along HdrHistogram's percentile spectrum: `ticks_per_half` points for every halving of the
        distance to 100 % (0, 50, 75, 87.5 ... %), as far as the requests resolve, then the max at 100 %: what a
        percentile-spectrum chart draws on its log-scaled axis of 1 / (1 − percentile)."""
        if not self.count:
            return []
        levels: list[float] = []
        step = 0
        while True:
            remaining = 0.5 ** (step / ticks_per_half)  # the share of requests above this level
            if remaining * self.count < 1:
                break
            levels.append(100 * (1 - remaining))
            step += 1
        return [*zip(levels, (us / 1000 for us in self._values_us(levels))), (100.0, self.max_ms())]


def problem(encoded: object) -> str | None:
    """What keeps `encoded` from being a histogram `Distribution.encode` wrote, or None. Checked before the library
    decodes it: a results file is anyone's, and its header names the counts array the library allocates, its zlib
    part decompresses without bound."""
    if not isinstance(encoded, str) or len(encoded) > MAX_ENCODED_CHARS:
        return f"is not a text of at most {MAX_ENCODED_CHARS:,} characters"
    try:
        raw = base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return "is not base64"
    if len(raw) < EXTERNAL_HEADER.size:
        return "is too short"
    cookie, length = EXTERNAL_HEADER.unpack_from(raw)
    if cookie & ~0xF0 != COMPRESSION_COOKIE_BASE or length != len(raw) - EXTERNAL_HEADER.size:
        return "has no HdrHistogram V2 header"
    inflate = zlib.decompressobj()
    try:
        payload = inflate.decompress(raw[EXTERNAL_HEADER.size :], MAX_DECODED_BYTES + 1)
    except zlib.error:
        return "does not decompress"
    if len(payload) > MAX_DECODED_BYTES or inflate.unconsumed_tail:
        return f"decompresses past {MAX_DECODED_BYTES:,} bytes"
    if len(payload) < PAYLOAD_HEADER.size:
        return "decompresses to less than its header"
    cookie, _, offset, digits, lowest, highest, ratio = PAYLOAD_HEADER.unpack_from(payload)
    if cookie & ~0xF0 != ENCODING_COOKIE_BASE or (digits, lowest, highest, offset, ratio) != (
        SIGNIFICANT_DIGITS,
        LOWEST_US,
        HIGHEST_US,
        0,
        1.0,
    ):
        return f"is not of this harness's shape ({LOWEST_US} µs to {HIGHEST_US:,} µs, {SIGNIFICANT_DIGITS} digits)"
    return None
