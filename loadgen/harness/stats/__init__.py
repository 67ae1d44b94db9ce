"""Pure numbers, one rule per question, nothing here knowing a record or a file: a few figures' median, spread and
interval (intervals.py), whether a series still moves (trend.py), two records' order by their attempts' ranks
(attempt_ranks.py), a paired ratio's interval (paired.py), and a paired sitting's shape (sitting_shape.py)."""
