"""voxport: PyTorch text-to-speech models on Apple Core AI."""
