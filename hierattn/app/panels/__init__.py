"""Sections of the pages, one module per kind of view: each function draws one section from an
``Explanation`` (or a checkpoint and a split) and returns what the page needs next."""
