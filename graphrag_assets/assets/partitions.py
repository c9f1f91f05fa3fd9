"""The document partitions shared by every per-document asset."""

from dagster import BackfillPolicy, DynamicPartitionsDefinition

DOCUMENT_PARTITIONS = DynamicPartitionsDefinition(name="documents")

# A range of new documents runs as one step, so LLM calls for all of them share one concurrency pool.
SINGLE_RUN = BackfillPolicy.single_run()

PARTITION_METADATA = {"partition_column": "document_key"}
