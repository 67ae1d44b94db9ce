"""Two records ordered by their attempts' ranks (Mann–Whitney): B is above A when at most `u` of the n_A × n_B pairs
of their attempts have A's req/s at or above B's, `u` the most that two identical servers show with probability no
higher than the profiles' false-order rate (2·4!·4!/8! = 2.9 %), in either direction, from the exact distribution of
that count.

Why not the median's intervals: two 95 % intervals are disjoint between identical servers far less often than 5 %, and
how much less depends on the count. With min–max intervals (the only ones 4 to 6 attempts allow at 95 %) it is
2.9 % at 4 attempts each, 0.8 % at 5 and 0.2 % at 6: a further round made a pair harder to tell apart, never easier.
Held to the rate itself, every attempt more orders more pairs. At 4 attempts each this is the intervals' rule exactly
(u = 0: B's slowest above A's fastest, min–max intervals disjoint); at 6 each it allows 4 of the 36 pairs inverted
(2.6 %), at 8 each 11 of 64 (2.8 %). With 3 attempts or fewer against as few even none inverted is more likely
than that between identical servers; the rule then stays the min–max intervals' (u = 0) at the rate it has (10 %
with 3 each), which the report states, as before.

Two processes of one server differ beyond their attempts (PROCESS_MARGIN, below): B's attempts are divided by
1 + PROCESS_MARGIN before they are ranked against A's, so that nothing a second process of one server could show is
claimed as an order. The ranks alone (no margin), their power: two servers 5 % apart, each attempt's noise 2.8 % (a
quiet machine: 2 % drift a round, 2 % its own), are told apart 38 % of the time with 4 attempts each, 66 % with 6 and
86 % with 8; at an own noise of 5 %, 13, 22 and 32 %; 15 % apart at 8 %, 39, 62 and 82 % (simulated, 40,000 draws;
tests/test_attempt_ranks.py checks the 6 at 2.8 %)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

PROFILE_ATTEMPTS = 4  # the profiles' attempts before six (and the seed profile's)
# The false-order rate of both rules (this one and round_pairs'): the min–max intervals' with the profiles' 4
# attempts, 2·4!·4!/8! = 2 / C(8, 4) (all of one server's attempts above all of the other's), so 4 against 4 allows
# u = 0
FALSE_ORDER_RATE = 2 / math.comb(2 * PROFILE_ATTEMPTS, PROFILE_ATTEMPTS)
# What two processes of one server differ by, beyond their attempts: B's attempts are compared with A's after dividing
# B's by 1 + PROCESS_MARGIN. All of a record's attempts come from one process, so their ranks say nothing of it. On
# 27 Nov (05:11, six attempts of 0.8 s) node and its A/A twin differed consistently round after round, whichever went
# first: backend close 6.3 %, keep-alive 2.8 %, hello 1.9 %, low-compute 4.2 %; without a margin the rule ordered the
# twins in 3 of 8 groups, with 4 % in none.
PROCESS_MARGIN = 0.04


def arrangements(n_a: int, n_b: int, u: int) -> int:
    """How many of the C(n_a + n_b, n_a) orderings of two exchangeable samples have exactly `u` pairs with A's above
    B's (the largest value is A's, above all n_b of B's, or B's, above none of A's)."""
    counts = _counts(n_a, n_b)
    return counts[u] if 0 <= u < len(counts) else 0


@lru_cache(maxsize=256)
def _counts(n_a: int, n_b: int) -> tuple[int, ...]:
    """The count of orderings for every u at once: the coefficients of the Gaussian binomial coefficient
    [n_a + n_b choose n_a]_q = prod_{i=1..n_a} (1 - q^(n_b + i)) / (1 - q^i), a polynomial of degree n_a · n_b.
    Each factor is one pass over the coefficients, so `make versus`'s records of 50 rounds and more take milliseconds
    (the recursion on (n_a, n_b, u) this replaces took minutes there)."""
    size = n_a * n_b + 1
    c = [0] * size
    c[0] = 1
    for i in range(1, n_a + 1):
        k = n_b + i  # multiply by (1 - q^k): downward, so each term uses the coefficient before this pass
        for j in range(size - 1, k - 1, -1):
            c[j] -= c[j - k]
        for j in range(i, size):  # divide by (1 - q^i): upward, the quotient's own terms
            c[j] += c[j - i]
    return tuple(c)


@lru_cache(maxsize=1024)
def allowed_inversions(n_a: int, n_b: int, rate: float = FALSE_ORDER_RATE) -> int:
    """The most pairs with A at or above B that still place B above A: the largest u whose two-sided probability
    between identical servers is at most `rate`; 0 (the min–max intervals' rule) where even none is more likely."""
    total = math.comb(n_a + n_b, n_a)
    found, tail = 0, 0
    for u in range(n_a * n_b + 1):
        tail += arrangements(n_a, n_b, u)
        if 2 * tail / total > rate * (1 + 1e-9):
            break
        found = u
    return found


def false_order_rate(n_a: int, n_b: int, rate: float = FALSE_ORDER_RATE) -> float:
    """How often the rule orders two identical servers measured n_a and n_b times: at most `rate`, but with few
    attempts the min–max intervals' 2 / C(n_a + n_b, n_a)."""
    u = allowed_inversions(n_a, n_b, rate)
    return 2 * sum(arrangements(n_a, n_b, v) for v in range(u + 1)) / math.comb(n_a + n_b, n_a)


def inversions(a: Sequence[float], b: Sequence[float]) -> int:
    """The pairs of attempts with A's at or above B's (a tie counts against B being above)."""
    return sum(1 for x in a for y in b if x >= y)


def above(b: Sequence[float], a: Sequence[float], margin: float = PROCESS_MARGIN) -> bool:
    """Whether attempts `b`, divided by 1 + `margin`, lie above attempts `a` beyond what identical servers' attempts
    show at the false-order rate."""
    if len(a) < 2 or len(b) < 2:
        return False
    return inversions(a, [x / (1 + margin) for x in b]) <= allowed_inversions(len(a), len(b))
