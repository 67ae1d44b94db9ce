"""A run's files, one module per format over the report's model (harness.report.model), as hyperfine's exporters:
files.py writes them all (report.html, charts/*.png, summary.md, summary.csv, versus.html); command.py is `make
report`."""
