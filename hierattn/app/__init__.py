"""The Streamlit glue the pages call: one module per job. Only this package and ``pages/`` import
Streamlit."""
