"""The shapes ckpt shows and the words it uses: the TypedDicts of every record (docs/json.md),
the store model, the vocabulary, the time syntax and the JSON encoder."""
