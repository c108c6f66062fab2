"""SMART on FHIR: EHR registrations, launches (EHR and standalone), tokens, Backend Services."""
