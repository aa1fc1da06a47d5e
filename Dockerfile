# The load generator image: Locust (pinned) plus loadlib and the locustfiles. Used by the mock, master and worker
# services of docker-compose.yml. Only what the package needs is copied, so a local .env never ends up in the image.
FROM locustio/locust:2.47.0

USER root
WORKDIR /opt/loadlib
COPY pyproject.toml README.md ./
COPY loadlib ./loadlib
COPY locustfiles ./locustfiles
RUN python -m pip install --no-cache-dir .

USER locust
ENV PYTHONUNBUFFERED=1
# ENTRYPOINT stays the base image's `locust`; the mock service overrides it.
