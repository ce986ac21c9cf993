"""One checkpoint or one thread: its tasks, `next`, status, history, changes and DeltaChannel
values, and the records built from them."""
