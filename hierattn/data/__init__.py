"""Text in, batches out: tokenisation, data sets (built-in, your tables, local corpora), formats,
the split and padded batches. Imports nothing above it (models, analysis, training, app)."""
