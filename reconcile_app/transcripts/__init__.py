"""Coaching transcripts: parsing, validated all-or-nothing import, patient matching, consent withdrawal."""
