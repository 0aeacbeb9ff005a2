"""Renderers: typed objects in, lines out (kafka-dump-log text, JSON Lines, rich tables)."""
