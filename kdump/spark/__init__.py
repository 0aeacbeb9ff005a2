"""kdump on Apache Spark (extra ``spark``): distributed verify, record export to Parquet, and
the "kafka-segments" data source, all on the same checks and parsers as the CLI."""
