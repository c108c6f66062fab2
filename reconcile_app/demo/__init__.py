"""The one-command demo: seeds the sandbox EHR, demo users and transcripts, then runs web + worker."""
