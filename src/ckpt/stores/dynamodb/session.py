"""boto3 clients for reading a DynamoDBSaver table (and its S3 bucket): only reads
(DescribeTable, Scan, Query, BatchGetItem, GetObject), one attempt each under a time limit,
errors told in one line without secrets.

`dynamodb://TABLE?region=R&endpoint_url=URL&bucket=B&s3_endpoint_url=URL&key_prefix=P`:
what the query string does not say, boto3 reads from the environment (AWS_REGION,
AWS_ENDPOINT_URL, credentials...), as DynamoDBSaver itself does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit

from ckpt.errors import BadOption, MissingDependency, NotACheckpointStore, StoreUnreadable
from ckpt.records.vocabulary import DEFAULT_TIMEOUT, install_hint
from ckpt.stores.base import close_quietly
from ckpt.stores.location import redact_url

OPTIONS: Final = frozenset({"region", "endpoint_url", "bucket", "s3_endpoint_url", "key_prefix"})
_CREDENTIALS: Final = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "AccessDeniedException",
        "AccessDenied",
        "ExpiredTokenException",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
    }
)


class DynamoSession:
    def __init__(self, spec: str, *, timeout: float | None = None) -> None:
        self.location = redact_url(spec)
        self.timeout = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        parts = urlsplit(spec)
        self.table = unquote(parts.netloc + parts.path).strip("/")
        if not self.table:
            raise BadOption(f"{self.location}: name the table (dynamodb://TABLE)")
        options = dict(parse_qsl(parts.query))
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise BadOption(
                f"{self.location}: unknown option {unknown[0]!r} (dynamodb:// takes "
                + ", ".join(sorted(OPTIONS))
                + ")"
            )
        self.bucket = options.get("bucket")
        self.key_prefix = options.get("key_prefix")
        try:
            import boto3
            import botocore.config
            import botocore.exceptions
        except ImportError:
            raise MissingDependency(
                f"reading a DynamoDB store needs boto3: {install_hint('dynamodb')}"
            ) from None
        self.botocore = botocore
        config = botocore.config.Config(
            connect_timeout=self.timeout,
            read_timeout=self.timeout,
            retries={"max_attempts": 1, "mode": "standard"},
            user_agent_extra="ckpt",
        )
        region = options.get("region")
        with self.errors("cannot connect"):
            session = boto3.session.Session()
            self.client: Any = session.client(
                "dynamodb",
                region_name=region,
                endpoint_url=options.get("endpoint_url"),
                config=config,
            )
            self.s3: Any = (
                session.client(
                    "s3",
                    region_name=region,
                    endpoint_url=options.get("s3_endpoint_url") or options.get("endpoint_url"),
                    config=config,
                )
                if self.bucket
                else None
            )

    @contextmanager
    def errors(self, doing: str = "cannot read") -> Iterator[None]:
        exceptions = self.botocore.exceptions
        try:
            yield
        except exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            message = " ".join(str(error.get("Message", "")).split())[:200]
            if code == "ResourceNotFoundException":
                raise NotACheckpointStore(
                    f"{self.location}: no table {self.table!r} here (DynamoDBSaver does not "
                    "create it: check the name, region and endpoint)"
                ) from None
            if code in _CREDENTIALS:
                raise StoreUnreadable(
                    f"{self.location}: {doing}: the AWS credentials were refused ({code})"
                ) from None
            raise StoreUnreadable(f"{self.location}: {doing}: {code}: {message}") from None
        except exceptions.NoCredentialsError:
            raise StoreUnreadable(
                f"{self.location}: {doing}: no AWS credentials (set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or a profile)"
            ) from None
        except exceptions.NoRegionError:
            raise StoreUnreadable(
                f"{self.location}: {doing}: no AWS region (add ?region=... or set AWS_REGION)"
            ) from None
        except (exceptions.EndpointConnectionError, exceptions.ConnectTimeoutError):
            raise StoreUnreadable(
                f"{self.location}: {doing}: no answer from the endpoint"
            ) from None
        except exceptions.ReadTimeoutError:
            raise StoreUnreadable(
                f"{self.location}: {doing}: no answer within {self.timeout:g} s "
                "(`timeout` sets the limit)"
            ) from None
        except (exceptions.BotoCoreError, ValueError) as exc:
            raise StoreUnreadable(
                f"{self.location}: {doing}: {' '.join(str(exc).split())[:200]}"
            ) from None

    def describe(self) -> dict[str, Any]:
        with self.errors("cannot read the table"):
            table: dict[str, Any] = self.client.describe_table(TableName=self.table)["Table"]
            return table

    def scan_keys(self, *also: str) -> Iterator[dict[str, Any]]:
        """Every item's PK and SK, and the small attributes `also` names where an item has
        them (a Scan projecting only those: no payload crosses the wire), page by page."""
        projection = ", ".join(("PK", "SK", *also))
        return self._pages(
            self.client.scan, {"TableName": self.table, "ProjectionExpression": projection}
        )

    def query(self, pk: str) -> Iterator[dict[str, Any]]:
        """Every item of the partition `pk`, in SK order."""
        return self._pages(
            self.client.query,
            {
                "TableName": self.table,
                "KeyConditionExpression": "PK = :pk",
                "ExpressionAttributeValues": {":pk": {"S": pk}},
            },
        )

    def _pages(
        self, request: Callable[..., dict[str, Any]], params: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        """The items of a Scan or Query, a page a request, each page asked from where
        the last one stopped (its LastEvaluatedKey)."""
        while True:
            with self.errors():
                page = request(**params)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            params = {**params, "ExclusiveStartKey": page["LastEvaluatedKey"]}

    def batch_get(self, keys: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The items at `keys` (missing ones left out), 100 a request, unprocessed keys
        asked again."""
        for start in range(0, len(keys), 100):
            pending: Any = {self.table: {"Keys": list(keys[start : start + 100])}}
            while pending:
                with self.errors():
                    answer = self.client.batch_get_item(RequestItems=pending)
                yield from answer.get("Responses", {}).get(self.table, [])
                pending = answer.get("UnprocessedKeys") or None

    def s3_get(self, key: str) -> bytes | None:
        """An offloaded payload; None when the object is gone or no bucket was named."""
        if self.s3 is None:
            return None
        name = f"{self.key_prefix}/{key}" if self.key_prefix else key
        with self.errors("cannot read the S3 bucket"):
            try:
                found: bytes = self.s3.get_object(Bucket=self.bucket, Key=name)["Body"].read()
            except self.botocore.exceptions.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    return None
                raise
            return found

    def close(self) -> None:
        close_quietly(self.client, self.s3)
