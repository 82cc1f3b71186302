"""The export room: a torch module to a Core AI program in a bundle — the export program,
precisions, decompositions, rewrites and the lint that refuses what a device cannot run.
Knows no model."""
