"""Chatterbox Turbo (Resemble AI): its port in progress; it declares no MODEL_NAME yet."""
