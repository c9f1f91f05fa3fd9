"""One module per step of the pipeline.

``backfill_policy`` on the per-document assets is beta in Dagster and warns when an asset is
defined; we rely on it deliberately (one run per range of documents). The filter is set here,
before any asset module is imported, so that no command prints the warning.
"""

import warnings

from dagster import BetaWarning

warnings.filterwarnings("ignore", category=BetaWarning)
