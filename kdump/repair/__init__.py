"""Repair: rebuild and trim indexes and recover damaged logs the way Kafka's broker does.

``plan_*()`` functions are pure: they read the memory-mapped files and say what the new files
hold (or where a log is cut). ``apply_plan()`` writes them atomically, keeps backups and the
cut bytes, and refuses to touch a log dir whose ``.lock`` a running broker holds.
"""
