"""Evaluation in the dual-stream paper's terms: replay a dataset and score the results."""
