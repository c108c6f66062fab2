"""Embedded default for the one-command demo: SQLite and a file-system Celery broker, no services."""
from .base import *  # noqa: F403
from .base import VAR_DIR, env_bool, env_list, env_str

DEBUG = env_bool("DEBUG", True)
SMART_SANDBOX_ENABLED = env_bool("SMART_SANDBOX_ENABLED", True)

# kombu's filesystem transport needs no server, yet tasks still run in a separate worker
# process started by `manage.py demo`, so the UI never blocks on the pipeline.
_BROKER_DIR = VAR_DIR / "broker"
if not env_str("CELERY_BROKER_URL"):
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(_BROKER_DIR / "control"),  # kombu defaults to ./control in the cwd
    }

# The file-system transport has no host; kombu warns about it on every connection.
LOGGING["loggers"]["kombu.connection"] = {"level": "ERROR"}  # noqa: F405

# The sandbox EHR answers on this machine over plain http.
SMART_ALLOW_HTTP_LOOPBACK = True
SMART_ALLOWED_NETWORKS = env_list("SMART_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
