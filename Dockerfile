# The load generator image: Locust (pinned) plus loadlib and the locustfiles. Used by the mock, master and worker
# services of docker-compose.yml. Only what the package needs is copied, so a local .env never ends up in the image.
FROM locustio/locust:2.47.0

USER root
WORKDIR /opt/loadlib
COPY pyproject.toml README.md ./
COPY loadlib ./loadlib
COPY locustfiles ./locustfiles
# results/ is where a process started here writes its default audit trail (--audit-file
# results/audit-{run_id}.jsonl); the user could not create it in root's /opt/loadlib.
RUN python -m pip install --no-cache-dir . \
    && install -d -o 1000 -g 1000 /opt/loadlib/results

# The base image's user locust, by number so that Kubernetes can verify runAsNonRoot (it cannot with a name).
# Nothing is written outside /tmp and results/: the pods run with a read-only root file system and mount emptyDirs
# on both (docs/kubernetes.md#pod-security). Hence no bytecode next to the locustfiles, and matplotlib's config and
# the tokenizer and data caches under /tmp instead of the home directory.
USER 1000:1000
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MPLCONFIGDIR=/tmp/matplotlib \
    XDG_CACHE_HOME=/tmp/cache
# ENTRYPOINT stays the base image's `locust`; the mock service overrides it.
