"""Production: PostgreSQL and Redis are required; HTTPS everywhere, cookies usable inside EHR iframes."""
from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import CACHE_URL, CELERY_BROKER_URL, DATABASES, FIELD_ENCRYPTION_KEYS, SECRET_KEY, env_bool, env_int

if "insecure" in SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in production")
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL in production")
if not CELERY_BROKER_URL:
    raise ImproperlyConfigured("CELERY_BROKER_URL must be set in production")
if not FIELD_ENCRYPTION_KEYS:
    raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS must be set in production")

DEBUG = False
if not CACHE_URL:
    if not CELERY_BROKER_URL.startswith("redis"):
        raise ImproperlyConfigured("CACHE_URL must be set when the broker is not Redis")
    # Share Redis with the broker, on the next database number.
    _base, _, _db = CELERY_BROKER_URL.rpartition("/")
    CACHES = {"default": {"BACKEND": "reconcile_app.core.cache.ResilientRedisCache",
                          "LOCATION": f"{_base}/{int(_db) + 1 if _db.isdigit() else 1}",
                          "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
# An EHR embeds the app in an iframe on another site: cookies must be SameSite=None + Secure.
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_SAMESITE = "None"
CSRF_COOKIE_SAMESITE = "None"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# The app is meant to be framed by EHRs: FrameAncestorsMiddleware sends a CSP frame-ancestors
# list built from the registrations, which supersedes X-Frame-Options (W002).
SILENCED_SYSTEM_CHECKS = ["security.W002"]
