"""`make bench`: `python -m bench.run` (run.py) in the repository root; inpage.py runs in the page's Pyodide."""
