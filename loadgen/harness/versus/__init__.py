"""Two sides measured in one sitting, and the commands that name them. The paired engine: the sitting's run
(paired_sitting.py), its starts and rounds (sitting.py), its shape fixed by the clock (stats/sitting_shape.py), what each verdict rests on
(evidence.py), the ratios on each CPU's speed (speeds.py). The commands: `make versus`, two builds of one server
(flow.py, their checkouts and builds in checkout.py); `make duel`, two servers or two processes of one (duel.py);
`make twin`, ours beside an outside implementation and then beside itself (twin.py, its twin.toml read in
twin_spec.py)."""
