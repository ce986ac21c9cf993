"""DynamoDBSaver tables (langgraph-checkpoint-aws), their S3 offload read with boto3."""

from ckpt.stores.dynamodb.store import DynamoDBStore

__all__ = ["DynamoDBStore"]
