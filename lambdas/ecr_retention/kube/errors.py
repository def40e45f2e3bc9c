"""Why an export wrote nothing."""

from __future__ import annotations


class ExportFailed(RuntimeError):
    """The cluster could not be read completely, or the manifest could not be stored: nothing was written.

    A partial manifest would look complete to the pipeline, so every failure aborts the whole export and
    lets the pipeline's staleness check block deletions instead.
    """
