"""A sandbox EHR (SMART authorization server + FHIR R4 API) for the demo and the tests; enabled only by settings."""
