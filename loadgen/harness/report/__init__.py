"""The report of a run: its model (model.py: groups, ranks, cells), and what it prints on the console (terminal.py,
first_screen.py, overview.py). The files written from it, one module per format, are harness.export's."""
