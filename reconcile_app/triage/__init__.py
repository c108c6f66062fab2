"""Triage: the discrepancy queue, review workflow, routing rules, write-back and CDS Hooks."""
