"""The only code in ckpt that changes a store: `ckpt prune` and `ckpt vacuum` with `--apply`.

Read commands never import this package. Each writer opens its own read-write connection
(never creating a file or a table), changes one thread per transaction, and leaves the
store's journal mode and schema as they were.
"""
