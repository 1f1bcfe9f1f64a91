"""The Tour's six steps, each drawn on the shipped checkpoints and judged by
``hierattn.analysis.tour``: one module per step's section, named as the step's module there, and
``steps`` lists them in order. What the sections share: ``verdict`` (a claim's check on the document
shown) and ``recorded`` (the rate over the test split, and the documents it offers)."""
