"""reconcile: dual-stream (clinical record + coaching narrative) reconciliation, one small app per domain."""
