"""The scripts that assemble the offline site (build/site/) and train the bundled model (build/model/).

Run each as a module from the repository root, as the Makefile does:

    .venv/bin/python -m build.site            # the site
    .venv/bin/python -m build.models OUTDIR   # the generated test and benchmark models
    .venv/bin/python -m build.serve           # serve build/site/
    .venv/bin/python -m build.model.train     # the bundled model

The name shadows PyPA's `build` for a Python started in the repository root; site.py runs that
one from outside the repository for this reason.
"""
