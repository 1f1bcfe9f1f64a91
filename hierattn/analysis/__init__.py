"""What the app and the command line say about a model and a document: explanations (``explain``),
attention metrics and their baselines (``metrics``, ``stats``), comparisons of two models (``compare``),
faithfulness tests, counterfactual edits, the tour's checks and the results tables (``evaluation``).
Reads models only through ``hierattn.contract``; never Streamlit."""
