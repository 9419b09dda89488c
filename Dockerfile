# The one swath image: every worker, the monitor, the scheduler, the dashboard and the web application run from it
# (`docker compose` picks the command). Build: docker build -t swath .
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    SWATH_DATA_ROOT=/swath-data

WORKDIR /opt/swath
COPY pyproject.toml setup.py README.md ./
COPY swath swath
COPY core core
COPY messages messages
COPY harvesters harvesters
COPY exporters exporters
COPY platforms platforms
COPY schemas schemas
# gcc only for the build: it compiles the C encoders (exporters/_csvrow.c, platforms/twitter/_jsontext.c) and leaves
# with its lists.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install . \
    && python -I -c "import swath.exporters._csvrow, swath.platforms.twitter._jsontext" \
    && apt-get purge -y --auto-remove gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 1000 --create-home swath \
    && mkdir -p /swath-data && chown swath:swath /swath-data

USER swath
VOLUME ["/swath-data"]
ENTRYPOINT ["swath"]
CMD ["--help"]
