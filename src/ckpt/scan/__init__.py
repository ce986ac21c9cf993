"""Every row of a store in one batched pass, for `ckpt stats`, `ckpt types` and `ckpt check`."""
