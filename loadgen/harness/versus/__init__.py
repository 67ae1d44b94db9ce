"""`make versus`: did a change make one server faster? Two builds of it measured in one sitting (flow.py), their
checkouts and builds (checkout.py), the shape of the sitting fixed by the clock (design.py), its starts and rounds
(sitting.py), and what each verdict rests on (evidence.py)."""
