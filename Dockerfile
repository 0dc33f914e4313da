# flashindex: multi-stage image on Node 26, the Active LTS.
# The build stage compiles TypeScript (better-sqlite3's addon comes prebuilt in its npm package: no
# C++ toolchain); the runtime stage holds only production dependencies, runs as a non-root user,
# and keeps its SQLite file on a volume.

FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the `prepare` script: with no sources copied yet it only says it skipped the build.
COPY scripts/buildIfStale.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

FROM node:26-bookworm-slim AS runtime
ENV NODE_ENV=production \
    FLASHINDEX_DB_PATH=/data/flashindex.db \
    FLASHINDEX_METRICS_HOST=0.0.0.0
WORKDIR /app
RUN groupadd --system flashindex && useradd --system --gid flashindex --home /app flashindex \
 && mkdir -p /data && chown flashindex:flashindex /data
COPY --from=build --chown=flashindex:flashindex /app/node_modules ./node_modules
COPY --from=build --chown=flashindex:flashindex /app/dist ./dist
COPY --chown=flashindex:flashindex package.json indexer.config.json ./
COPY --chown=flashindex:flashindex config ./config
USER flashindex
VOLUME ["/data"]
# Prometheus metrics, /healthz, /readyz and the status page (bound to 0.0.0.0 in the container by
# FLASHINDEX_METRICS_HOST): publish it on the host's loopback only, `docker run -p 127.0.0.1:9464:9464`.
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:9464/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# The bin itself: its shebang sets the nursery and the allocator (see src/cli/main.ts and the benchmark in the README).
ENTRYPOINT ["./dist/src/cli/main.js"]
CMD ["start", "--config", "config/base-mainnet.json"]
