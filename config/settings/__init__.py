"""Settings package: base, local (embedded demo), test and production."""
