"""The clinical stream: patients, record pulls, versioned snapshots and the status-aware view of the record."""
