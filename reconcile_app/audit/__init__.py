"""Append-only audit trail of every view of patient data and every decision."""
