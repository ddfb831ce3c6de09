"""One settings file, read from the environment through typed helpers (timeline.env).

DATABASE_URL / REDIS_URL unset -> embedded Postgres and Redis under .data/ (timeline.embedded).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import django_stubs_ext
from csp.constants import NONE, SELF, UNSAFE_INLINE

from timeline import embedded
from timeline.env import (
    ConfigError,
    database_from_url,
    env_bool,
    env_int,
    env_list,
    env_str,
    is_local_database,
    redis_broker_url,
    redis_client_url,
)

# Generic classes such as admin.ModelAdmin[Model] are subscriptable at run time too.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
# Local mode: everything runs on this one machine, so a key generated into .data/secret_key
# serves every process. That is a database that is embedded (no DATABASE_URL) or on this machine
# (loopback or a Unix socket, as for ./dev test and CI), DEBUG, or LOCAL=1 said outright (LOCAL=0
# says the opposite). Anything else is a shared deployment: several hosts must share one key, so
# it must bring SECRET_KEY itself.
LOCAL = env_bool("LOCAL", is_local_database(env_str("DATABASE_URL")) or DEBUG)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not LOCAL:
        raise ConfigError(
            "SECRET_KEY is not set. A shared deployment (a database on another host) needs its "
            "own: a long random string, e.g. from python -c 'import secrets; "
            "print(secrets.token_urlsafe(50))', the same for the web server and the workers. "
            "On a machine of your own, set LOCAL=1 to use a key generated into .data/secret_key."
        )
    try:
        SECRET_KEY = embedded.secret_key()
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"SECRET_KEY: {exc}") from None
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "axes",
    "timeline",
    "ingest",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A NUL or a lone surrogate in the path or a parameter: 400 before any view or axes reads it.
    "timeline.middleware.RefuseNulMiddleware",
    # django-csp's, with the settings' policy built once (timeline.middleware).
    "timeline.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The figure's JSON and the version poll: session, user, incident and version in one query.
    "timeline.access.SessionIncidentMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Every page needs a login unless its view is marked login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # Turns a lockout (below) into the 429 page; must come last.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "timeline.urls"
WSGI_APPLICATION = "timeline.wsgi.application"

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
                "timeline.context_processors.vocabulary",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL") or embedded.postgres_url()
DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL") or embedded.redis_url()
# The same server as redis-py (the cache, timeline.shared_cache) and as kombu (the broker) name
# it: they spell a Unix socket differently (unix:// and redis+socket://).
REDIS_CLIENT_URL = redis_client_url(REDIS_URL)

# Celery: configured here under the CELERY_ namespace (timeline/celery.py loads it).
CELERY_BROKER_URL = redis_broker_url(REDIS_URL)
# One cache for every web and worker process (the built timeline figures, their overlays and
# downsampled windows): a per-process cache would build each figure once per gunicorn worker.
# Sessions stay in the database alone, so pages work while Redis is down (every cache read is
# then a miss). Keys carry the database's name and OID (timeline.cachekeys), so two databases
# behind one Redis, or a database created again under an old name, never read each other's.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_CLIENT_URL,
        "KEY_PREFIX": "timeline",
        "KEY_FUNCTION": "timeline.cachekeys.make_key",
        "TIMEOUT": 600,
    }
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 3,
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),  # faults tests lower it
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True  # results live on Artifact / Analysis rows, not in Redis
CELERY_TASK_ACKS_LATE = True  # tasks are idempotent: a worker killed mid-task redoes it
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 1700)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TIMEZONE = "UTC"
# One queue name per deployment (tests use their own so stale tasks never cross over).
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "timeline")
# Ingest on that queue, analyses on "<queue>.analysis" (timeline/celery.py says why).
CELERY_TASK_ROUTES = ("timeline.celery.route_task",)
# Work left behind (timeline.runs, ingest.services.reaper): a worker beats every
# WORKER_HEARTBEAT_S while it runs a load or an analysis; a running row whose beat is three
# beats old is handed to another worker (at most RUN_MAX_ATTEMPTS runs, then it fails with the
# reason). An analysis request not run ANALYSIS_REQUEUE_S after it was queued (or never queued:
# the broker was down) is queued again. Beat (`celery worker -B`, as ./dev run starts it) runs
# the reaper every REAPER_INTERVAL_S and the sweep of unreferenced uploads every
# UPLOADS_SWEEP_INTERVAL_S; the sweep leaves files younger than UPLOADS_SWEEP_GRACE_S alone.
WORKER_HEARTBEAT_S = env_int("WORKER_HEARTBEAT_S", 30)
RUN_MAX_ATTEMPTS = env_int("RUN_MAX_ATTEMPTS", 3)
ANALYSIS_REQUEUE_S = env_int("ANALYSIS_REQUEUE_S", 300)
REAPER_INTERVAL_S = env_int("REAPER_INTERVAL_S", 60)
UPLOADS_SWEEP_INTERVAL_S = env_int("UPLOADS_SWEEP_INTERVAL_S", 3600)
UPLOADS_SWEEP_GRACE_S = env_int("UPLOADS_SWEEP_GRACE_S", 3600)
CELERY_BEAT_SCHEDULE = {
    "reap-stale-runs": {
        "task": "ingest.reap_stale_runs",
        "schedule": REAPER_INTERVAL_S,
        "options": {"expires": REAPER_INTERVAL_S},  # a backlog of them is one run
    },
    "sweep-uploads": {
        "task": "ingest.uploads_sweep",
        "schedule": UPLOADS_SWEEP_INTERVAL_S,
        "options": {"expires": UPLOADS_SWEEP_INTERVAL_S},
    },
    "compact-incident-changes": {
        "task": "timeline.changes_compact",
        "schedule": 3600,
        "options": {"expires": 3600},
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Log-in throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords, a username is
# locked out from that client address for LOGIN_COOLOFF_MINUTES, right password or not. Keyed on
# username AND address, so an attacker can neither lock a user out everywhere nor lock out other
# users behind the same address. Attempts are rows in the database (shared by every process).
# The address is REMOTE_ADDR: behind a reverse proxy, set AXES_IPWARE_* / install django-ipware.
# The push API authenticates by bearer token, never through these backends, so it is unaffected.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out username+address
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True  # a good login forgets the failures before it
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no start-up banner in every command's output
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "incident_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files are collected (manage.py collectstatic; ./dev run and the test session do it) under
# hashed names with gzip and Brotli copies beside them; WhiteNoise serves those, the hashed ones
# with a year-long "immutable" cache (a new build gets new names), the rest for WHITENOISE_MAX_AGE.
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(embedded.DATA_DIR / "static")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_MAX_AGE = env_int("WHITENOISE_MAX_AGE", 3600)  # names without a hash (favicon-like)

# Uploads: bounded, and kept under one folder (ingest.services checks every path).
UPLOAD_ROOT = Path(env_str("UPLOAD_ROOT", str(BASE_DIR / ".data" / "uploads")))
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 512 * 1024 * 1024)
ARCHIVE_MAX_EXPANDED_BYTES = env_int("ARCHIVE_MAX_EXPANDED_BYTES", 2 * 1024 * 1024 * 1024)
ARCHIVE_MAX_MEMBERS = env_int("ARCHIVE_MAX_MEMBERS", 20_000)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

SESSION_COOKIE_HTTPONLY = True
# Keep what a session proved about an incident per web process, forgotten on any change
# Postgres announces (timeline.proofs); 0: prove it with a query on every request.
SESSION_PROOFS = env_bool("SESSION_PROOFS", True)
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-free meta tag instead
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# HTTPS=1: the site is served over TLS only. One switch for the settings `check --deploy` asks
# for; each can still be set on its own. A TLS-terminating proxy in front must set
# X-Forwarded-Proto (and drop it from clients): say so with BEHIND_TLS_PROXY=1.
HTTPS = env_bool("HTTPS", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", HTTPS)
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp; Django 5.2 has none built in, 6.0's SECURE_CSP takes the
# same dict): only the app's own scripts run (static/app and static/vendor), no inline script,
# no eval, nothing framed, nothing posted elsewhere.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # axes logs every login and failure at INFO; its lockouts are warnings, and those stay.
    "loggers": {"axes": {"level": "WARNING"}},
}
