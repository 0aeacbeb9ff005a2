"""Click commands beyond dump, one module each; cli.py registers them."""
