"""Compile Lab engine: the model catalogue, the measuring child, statistics, the runner, the
worker and the CLI. Knows torch; never imports Streamlit or Plotly."""
