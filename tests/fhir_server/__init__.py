"""The medplum FHIR test server (Node) and its pytest fixture."""
