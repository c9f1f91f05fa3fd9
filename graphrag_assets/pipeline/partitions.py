"""The document partitions shared by every per-document asset, and the names of the two jobs."""

from dagster import BackfillPolicy, DynamicPartitionsDefinition

PARTITIONS_NAME = "documents"
DOCUMENT_PARTITIONS = DynamicPartitionsDefinition(name=PARTITIONS_NAME)
DOCUMENTS_JOB = "document_job"
CORPUS_JOB = "corpus_job"

# A range of new documents runs as one step, so LLM calls for all of them share one concurrency pool.
SINGLE_RUN = BackfillPolicy.single_run()

PARTITION_METADATA = {"partition_column": "document_key"}

# Tables written per document partition (their rows are deleted when the document is).
PER_DOCUMENT_TABLES = ("source_files", "documents", "text_units", "graph_extractions", "extraction_status", "text_unit_embeddings")


def complete_document_partitions(instance, keys: list[str]) -> set[str]:
    """The document partitions whose every per-document asset was materialized by its latest run.

    A run that failed part-way (say, the embeddings of a range of documents) leaves its earlier
    assets materialized; those documents are not complete and are re-run by the next index.
    """
    from dagster import AssetKey
    from dagster._core.storage.partition_status_cache import AssetPartitionStatus

    complete = set(keys)
    for table in PER_DOCUMENT_TABLES:
        statuses = instance.get_status_by_partition(AssetKey(table), list(keys), DOCUMENT_PARTITIONS) or {}
        complete &= {key for key, status in statuses.items() if status == AssetPartitionStatus.MATERIALIZED}
    return complete
