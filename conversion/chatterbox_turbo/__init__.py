"""Chatterbox Turbo's port, in progress: it declares no MODEL_NAME yet, so the CLI registry
does not list it."""
