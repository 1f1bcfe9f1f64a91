"""The benchmark: ``python -m hierattn bench`` (from the repository root) runs ``bench.run``. Kept out
of the runtime package: it drives the app in a browser and through Streamlit's AppTest."""
