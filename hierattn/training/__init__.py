"""Training: the loop shared by in-memory data sets and streamed corpora (``loop``), the presets
of the shipped checkpoints, training on a corpus cache with DistributedDataParallel (``corpus``),
the cache itself, Word2Vec embeddings, and the Train page's background jobs. Never Streamlit."""
