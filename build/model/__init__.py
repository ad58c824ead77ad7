"""The bundled model, models/aerix-tools.gguf: its data (corpus), its training (train), its score (eval).

    .venv/bin/python -m build.model.train     # `make model`
    .venv/bin/python -m build.model.eval      # `make eval`
"""
