"""The `voxport` command line: the shared flags and verbs, and the registry of models."""
