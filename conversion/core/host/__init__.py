"""The host room: the math between graphs that each model's Python host (and, written again
from the same fixtures, the Swift host) runs — DSP, sampling, buckets, text splitting, audio
files. No Core AI, no model."""
