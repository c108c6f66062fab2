"""Test settings: fast hashing, in-memory email, eager tasks unless a real broker is given."""
from .base import *  # noqa: F403
from .base import env_bool, env_list, env_str

DEBUG = False
SMART_SANDBOX_ENABLED = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
FIELD_ENCRYPTION_KEYS = ["5Qw3H2bXrVHc3mYxEhvfv3nq1b0uYQyC6m8WJ6Hq3aM="]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Without a broker the pipeline runs eagerly in-process; with one (CI), the `services`
# tests send real messages to a real worker.
# Fake endpoints answer request by request from a script; the tests that want the answer cache turn it on.
LLM_ANSWER_CACHE_SIZE = 0
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "memory://")
CELERY_TASK_ALWAYS_EAGER = not env_str("CELERY_BROKER_URL")
CELERY_TASK_EAGER_PROPAGATES = True
# The test client and requests (http://localhost) would drop Secure cookies; the browser tests,
# which check the framed launch, turn partitioned cookies back on.
FRAMED_COOKIES = env_bool("FRAMED_COOKIES", False)

# The sandbox EHR (live_server) and the medplum FHIR server answer on loopback over plain http.
SMART_ALLOW_HTTP_LOOPBACK = True
SMART_ALLOWED_NETWORKS = env_list("SMART_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
