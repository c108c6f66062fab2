"""The narrative stream: memories extracted from patient turns, as deltas with provenance."""
