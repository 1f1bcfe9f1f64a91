"""The experiments registry: every row of docs/RESULTS.md's results tables as a small committed spec
(``experiments/<data set>.toml``: model, config, text caps, recipe, seeds), the results each seed
produced (``results/<data set>/<row>/seed-<n>.json``), rerun by ``python -m hierattn reproduce``
and turned into docs/RESULTS.md's tables and the papers' orderings by ``python -m hierattn report``.

``spec`` reads the specs, ``results`` reads and writes what runs recorded, ``runner`` trains and
records one seed, ``verdict`` decides an ordering against its noise, ``report`` writes the tables.
"""
