"""What changes a store: copy, prune and vacuum (a plan first, one thread per transaction)."""
