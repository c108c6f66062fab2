"""Reconciliation: every memory checked against the clinical stream, giving findings with citations."""
