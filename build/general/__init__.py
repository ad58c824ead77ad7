"""aerix-general: SmolLM2-135M-Instruct tuned for aerix's turn contract (issue 29)."""
