"""Chatterbox Turbo (Resemble AI): its port, in progress. It declares no MODEL_NAME yet, so
the CLI registry does not list it (docs/adding-a-model.md: a folder becomes a model when it
does, with its port and flags)."""
