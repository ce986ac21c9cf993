"""What the readers of langgraph-checkpoint-aws's savers (DynamoDBSaver, ValkeySaver,
AgentCoreValkeySaver) say of the release whose layout they read."""

from __future__ import annotations

from typing import Final

from ckpt.records.model import SaverFacts

AWS_RELEASE: Final = "langgraph-checkpoint-aws 1.2.6"  # the saver `ckpt check` speaks for


def aws_saver(saver: str, evidence: tuple[str, ...], *, caveat: str = "") -> SaverFacts:
    """`saver` of langgraph-checkpoint-aws, in the layout of AWS_RELEASE, which reads it
    (`caveat`: what it needs to, said after)."""
    return SaverFacts(
        saver=saver,
        releases=f"langgraph-checkpoint-aws (the layout of {AWS_RELEASE})",
        evidence=evidence,
        langgraph="reads",
        note=f"{saver} of {AWS_RELEASE} reads it{caveat}",
    )
