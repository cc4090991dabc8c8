FROM python:3.11-slim
COPY --from=ghcr.io/astral-sh/uv:0.13 /uv /usr/local/bin/uv
WORKDIR /app
COPY pyproject.toml uv.lock README.md ./
COPY recon recon
COPY workflows workflows
COPY activities activities
COPY worker.py starter.py ./
# Bytecode compiled into the image: every worker and command starts without compiling its imports.
RUN uv sync --frozen --no-dev --compile-bytecode \
    && .venv/bin/python -m compileall -q recon workflows activities worker.py starter.py
ENV PATH="/app/.venv/bin:$PATH"
CMD ["recon", "worker"]
