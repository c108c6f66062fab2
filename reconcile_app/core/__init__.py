"""Cross-cutting pieces: roles, request context, errors, encrypted fields, health."""
