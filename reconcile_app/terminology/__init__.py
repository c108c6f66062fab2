"""One clinical terminology shared by extraction and reconciliation: drugs, classes, conditions, lay terms, each sourced."""
