"""What a checkpoint folder holds, and the one error raised when one is missing, corrupted or does
not match its config."""
from __future__ import annotations

FORMAT_VERSION = 1
FILES = ("config.json", "model.safetensors", "vocab.json", "metrics.json", "README.md")  # README.md: the card
HELDOUT = "heldout.json"  # optional: the held-out documents of a model trained on your own data
HELDOUT_MB = 4.0  # what a checkpoint keeps of them (validation and test together)
PLAYBACK = "playback.json"  # optional: its attention on a few validation documents, epoch by epoch
PLAYBACK_MB = 8.0  # a playback file larger than this is not read


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupted or does not match its config; the message says which."""
