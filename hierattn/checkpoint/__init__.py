"""Checkpoints: a folder of ``config.json`` + ``model.safetensors`` + ``vocab.json`` +
``metrics.json`` + ``README.md`` (the card), and ``heldout.json`` for a model trained on your own data.

Read with safetensors only: a checkpoint can never execute code. Nothing in a folder is imported,
unpickled or run, and other files in it (a ``.pt`` pickle, say) are never opened. See
docs/RELIABILITY.md.

- ``format``: the files, the format version, and ``CheckpointError``.
- ``classifier``: a loaded checkpoint (``Classifier``) and the device it runs on.
- ``writing``: ``save_checkpoint`` (atomic) and the card, ``README.md``.
- ``reading``: ``load_classifier``, every file checked within the limits before it is trusted.
"""
