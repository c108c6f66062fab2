"""Settings shared by every environment; everything deployment-specific comes from the environment."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url

from .env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("RECONCILE_VAR_DIR", str(BASE_DIR / "var")))

# https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key
SECRET_KEY = env_str("SECRET_KEY", "insecure-dev-key-change-me-0123456789abcdefghijklmnopqrstuvwxyz")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Tokens and private keys are encrypted at rest with Fernet keys; the first encrypts,
# all decrypt, so keys can be rotated by prepending a new one.
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "axes",
    # Order follows the pipeline; imports flow downward only.
    "reconcile_app.core",
    "reconcile_app.audit",
    "reconcile_app.smart",
    "reconcile_app.fhir",
    "reconcile_app.sandbox",
    "reconcile_app.transcripts",
    "reconcile_app.narrative",
    "reconcile_app.reconciliation",
    "reconcile_app.triage",
    "reconcile_app.context",
    "reconcile_app.evaluation",
    "reconcile_app.demo",
    "reconcile_app.ledger",  # truth maintenance across both streams: on top, like evaluation
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outside the session, CSRF and messages middleware: it sees (and partitions) the cookies they set.
    "reconcile_app.smart.middleware.PartitionedCookiesMiddleware",
    "reconcile_app.core.middleware.RequestIdMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "reconcile_app.core.middleware.TimezoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "reconcile_app.smart.middleware.FrameAncestorsMiddleware",
    "reconcile_app.smart.middleware.LaunchBoundAccessMiddleware",
    "reconcile_app.core.middleware.LoginRequiredMiddleware",
    # Last, as django-axes requires: turns a locked-out sign-in into the 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "reconcile_app.core.context_processors.navigation",
                "reconcile_app.smart.context_processors.launch_context",
            ],
        },
    },
]

# https://docs.djangoproject.com/en/5.2/ref/settings/#databases
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'reconcile.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the embedded worker write while the web process reads.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# https://docs.djangoproject.com/en/5.2/topics/cache/ - queue counts, alert badges and the
# coaching-platform rate limit live here, so several web workers must share it (Redis).
CACHE_URL = env_str("CACHE_URL", "")
# Redis behind ResilientRedisCache: an unreachable Redis reads as a miss and writes are dropped, so
# no page answers 500 over a cache (the queue hides its counts, the API rate limit counts in the DB).
CACHES = {
    "default": (
        {"BACKEND": "reconcile_app.core.cache.ResilientRedisCache", "LOCATION": CACHE_URL, "OPTIONS": {
            "socket_connect_timeout": 1, "socket_timeout": 1}}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# django-axes: sign-in throttling per account and per address (each counted on its own), kept in the
# database (no cache needed). Locked out for AXES_COOLOFF after AXES_FAILURE_LIMIT failures;
# lockouts and refused attempts are audited (core.signals).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("LOGIN_COOLOFF_SECONDS", 15 * 60))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "reconcile_app.core.http.client_address"
AXES_LOCKOUT_CALLABLE = "reconcile_app.core.views.login_locked_out"
AXES_VERBOSE = False  # its log lines name the username; the audit trail records the lockout instead
# How many reverse proxies in front of the app append to X-Forwarded-For (0: use REMOTE_ADDR only,
# because the header is trivially forged without a proxy that overwrites it).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

LOGIN_URL = "core:login"
LOGIN_REDIRECT_URL = "core:home"
LOGOUT_REDIRECT_URL = "core:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

# Sessions and cookies. Inside an EHR iframe the cookies must be SameSite=None, which
# browsers only accept with Secure; production turns both on (see production.py).
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# An EHR frames the app from another site, where browsers blocking third-party cookies keep only
# partitioned ones (CHIPS): on HTTPS and on loopback hosts every cookie is sent as
# SameSite=None; Secure; Partitioned (smart.middleware.PartitionedCookiesMiddleware).
FRAMED_COOKIES = env_bool("FRAMED_COOKIES", True)
X_FRAME_OPTIONS = "SAMEORIGIN"  # replaced per response by FrameAncestorsMiddleware
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# https://docs.celeryq.dev/en/stable/userguide/configuration.html
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = None  # results live in our own tables; nothing clinical rests in Redis
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 15 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 14 * 60)
CELERY_TASK_ACKS_LATE = True  # safe because every task is idempotent on a unique constraint
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
if CELERY_BROKER_URL.startswith("redis"):
    # A message held by a worker that died comes back after this long. It must exceed the longest
    # retry countdown (pipeline backoff tops out at 5 min), or a message would be delivered twice.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 1800)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_BEAT_SCHEDULE: dict = {
    "triage-escalate-sla-breaches": {
        "task": "reconcile_app.triage.tasks.sla_escalate_task",
        "schedule": 300.0,
    },
    # Re-enqueues patients whose enqueue was lost (broker outage) or whose lease expired: with the
    # short lease below, a dead worker's patient resumes within lease + this interval (75 s).
    "pipeline-sweep": {
        "task": "reconcile_app.pipeline.pipeline_sweep_task",
        "schedule": 30.0,
    },
    # Uploads whose import never finished (the process died) end as failed, with the reason.
    "transcripts-upload-sweep": {
        "task": "reconcile_app.transcripts.tasks.uploads_fail_stuck_task",
        "schedule": 300.0,
    },
    # Launches abandoned at the EHR's sign-in lose their encrypted PKCE state.
    "smart-expire-abandoned-launches": {
        "task": "reconcile_app.smart.tasks.launches_expire_abandoned_task",
        "schedule": 300.0,
    },
    # Records refresh through Backend Services; a new version re-evaluates only the findings it touches.
    "fhir-record-refresh": {
        "task": "reconcile_app.fhir.tasks.records_refresh_task",
        "schedule": 900.0,
    },
    # Evolving states (goals, routines) past their time to live become outdated.
    "ledger-expire-memories": {
        "task": "reconcile_app.ledger.tasks.memories_expire_task",
        "schedule": 3600.0,
    },
    "core-worker-heartbeat": {
        "task": "reconcile_app.core.tasks.heartbeat_task",
        "schedule": 60.0,
    },
}

# Engines (swappable behind an interface chosen by setting).
EXTRACTION_ENGINE = env_str("EXTRACTION_ENGINE", "rules")
# Assertion and subject in the rules extractor: "context" (medspaCy ConText; better end to end on tune, docs/assertion.md), "own" (engines/context.py) or "context-assertion" (ConText assertion, own subject).
EXTRACTION_ASSERTION = env_str("EXTRACTION_ASSERTION", "context")
RECONCILIATION_ENGINE = env_str("RECONCILIATION_ENGINE", "rules")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "not-needed")
OPENAI_MODEL = env_str("OPENAI_MODEL", "gpt-4o")
OPENAI_TIMEOUT_SECONDS = env_int("OPENAI_TIMEOUT_SECONDS", 60)
OPENAI_MAX_RETRIES = env_int("OPENAI_MAX_RETRIES", 2)
# Validated answers kept per process (memory only) for requests asked again word for word: 0 turns it off.
LLM_ANSWER_CACHE_SIZE = env_int("LLM_ANSWER_CACHE_SIZE", 256)

# SMART on FHIR.
SMART_SANDBOX_ENABLED = env_bool("SMART_SANDBOX_ENABLED", False)
# Where the sandbox EHR's chart frames the app; empty: the launch URL the app registered with it.
SANDBOX_APP_LAUNCH_URL = env_str("SANDBOX_APP_LAUNCH_URL", "")
SMART_HTTP_TIMEOUT_SECONDS = env_int("SMART_HTTP_TIMEOUT_SECONDS", 15)
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "http://127.0.0.1:8000")
FHIR_PAGE_SIZE = env_int("FHIR_PAGE_SIZE", 1000)  # _count asked per search page; the EHR may give fewer (its maximum)
FHIR_PULL_CONCURRENCY = env_int("FHIR_PULL_CONCURRENCY", 4)  # searches of one pull in flight at once
FHIR_PAGE_RETRIES = env_int("FHIR_PAGE_RETRIES", 2)  # extra attempts at a page answered 5xx/429 or timed out
# A clinician's access ends with the launch: at the latest this long after it began.
SMART_LAUNCH_MAX_SECONDS = env_int("SMART_LAUNCH_MAX_SECONDS", 8 * 3600)
SMART_PENDING_LAUNCH_SECONDS = env_int("SMART_PENDING_LAUNCH_SECONDS", 900)
# Outbound calls to EHRs (discovery, tokens, keys, FHIR): https only, and never to private, loopback
# or link-local addresses unless listed here (CIDRs, e.g. an EHR on the hospital network).
SMART_ALLOWED_NETWORKS = env_list("SMART_ALLOWED_NETWORKS", [])
SMART_ALLOW_HTTP_LOOPBACK = False  # development settings only: the sandbox EHR on http://127.0.0.1


# Transcript import limits: one upload cannot flood the queue.
TRANSCRIPT_MAX_BYTES = env_int("TRANSCRIPT_MAX_BYTES", 5 * 1024 * 1024)
TRANSCRIPT_MAX_SESSIONS = env_int("TRANSCRIPT_MAX_SESSIONS", 500)  # per upload
TRANSCRIPT_MAX_TURNS = env_int("TRANSCRIPT_MAX_TURNS", 1000)  # per session
# An upload still "received" this long after it arrived never finished importing: the sweep fails it.
TRANSCRIPT_STUCK_AFTER_SECONDS = env_int("TRANSCRIPT_STUCK_AFTER_SECONDS", 600)
TRANSCRIPT_API_RATE_LIMIT = env_int("TRANSCRIPT_API_RATE_LIMIT", 60)
TRANSCRIPT_API_RATE_WINDOW_SECONDS = env_int("TRANSCRIPT_API_RATE_WINDOW_SECONDS", 60)

# Pipeline: a short per-patient lease renewed by a heartbeat while a task works, so the patient of a
# worker that died is picked up by the sweep within lease + sweep interval.
PIPELINE_LEASE_SECONDS = env_int("PIPELINE_LEASE_SECONDS", 45)
PIPELINE_HEARTBEAT_SECONDS = env_int("PIPELINE_HEARTBEAT_SECONDS", 10)

# Audit: anonymous refusals are one row per window, action and reason, with a count.
AUDIT_ANONYMOUS_WINDOW_SECONDS = env_int("AUDIT_ANONYMOUS_WINDOW_SECONDS", 300)

# Ledger: every EHR patient's record is pulled again when its last pull is older than this (launches
# pull on their own); a discrepancy closes on its own (resolved by EHR update) at most LEDGER_FLAP_LIMIT
# times per window, then waits for a person; evolving states expire after their time to live (days;
# safety categories never expire whatever is set here); retraction of a write-back marks it
# entered-in-error unless deleting is preferred (each falls back to the other where the EHR refuses).
RECORD_REFRESH_SECONDS = env_int("RECORD_REFRESH_SECONDS", 6 * 3600)
LEDGER_FLAP_WINDOW_SECONDS = env_int("LEDGER_FLAP_WINDOW_SECONDS", 7 * 24 * 3600)
LEDGER_FLAP_LIMIT = env_int("LEDGER_FLAP_LIMIT", 1)
LEDGER_MEMORY_TTL_DAYS = {
    "goal": env_int("LEDGER_TTL_GOAL_DAYS", 90),
    "lifestyle": env_int("LEDGER_TTL_LIFESTYLE_DAYS", 90),
    "care_activity": env_int("LEDGER_TTL_CARE_ACTIVITY_DAYS", 180),
}
RETRACTION_PREFER_DELETE = env_bool("RETRACTION_PREFER_DELETE", False)

# https://docs.djangoproject.com/en/5.2/topics/email/
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "reconcile@localhost")

# Logs carry ids only; the PHI filter is a second line of defence that drops message args.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "reconcile_app.core.logging.RequestIdFilter"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Request logs include full URLs; ours carry no PHI, but keep them at WARNING.
        "django.request": {"level": "WARNING"},
        "django.server": {"level": "WARNING"},
        # django-axes logs every sign-in with a masked username at INFO; lockouts go to the audit trail.
        "axes": {"level": "WARNING"},
    },
}
LOGIN_URL_PATH = "/login/"
