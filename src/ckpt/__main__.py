"""Entry point for `python -m ckpt`."""

from ckpt.cli import main

main()
