"""Producer state and transactions of a partition, read offline (``kdump txn``)."""
