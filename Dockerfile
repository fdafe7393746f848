# syntax=docker/dockerfile:1
# sidegate: authentication gateway sidecar.
#   docker build -t sidegate:0.1.0 .
#   docker run --rm -p 8080:8080 -v sidegate-data:/data --stop-timeout 20 sidegate:0.1.0
#   (several replicas: -e SIDEGATE_SECRET_KEY=… -e SIDEGATE_REDIS_URL=redis://host.docker.internal:6379)

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: dev dependencies, the TypeScript compiler and a C++ toolchain for better-sqlite3 (the
# embedded store's native module); dist/ and the production node_modules are all that leave
FROM ${NODE_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: "prepare" would build before the sources are copied; it runs below.
# better-sqlite3's own install script is run on its own: a prebuilt binary where one can be
# fetched, else compiled from source here (about a minute), never in the runtime image
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild better-sqlite3
COPY tsconfig.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
RUN npm run build && npm prune --omit=dev && npm cache clean --force

# ---- runtime: production dependencies only (with the native module built above), no compiler, no tests
FROM ${NODE_IMAGE} AS runtime
# a fixed malloc mmap threshold (glibc's default, kept from rising): the 16 MB each scrypt password check
# allocates goes back to the system when freed instead of staying resident (docs/performance.md, "Memory")
ENV NODE_ENV=production MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY static ./static
COPY gateway.yml ./gateway.yml
# the embedded store and the generated secret key live in /data, a volume the user below can
# write (mount one to keep them: docker run -v sidegate-data:/data); SIDEGATE_REDIS_URL selects Redis instead
RUN mkdir -p /data && chown 1000:1000 /data
ENV SIDEGATE_STORE_PATH=/data/sidegate.db SIDEGATE_SECRET_KEY_FILE=/data/sidegate.key
VOLUME ["/data"]
# uid/gid 1000 is the image's "node" user; numeric so Kubernetes' runAsNonRoot can verify it
USER 1000:1000
EXPOSE 8080 7080
# node, not curl (the slim image has none); SIDEGATE_PORT if listen.port was moved
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "require('http').get('http://127.0.0.1:'+(process.env.SIDEGATE_PORT||8080)+'/healthz',r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))"]
# exec form: node is PID 1 and receives SIGTERM itself (drain, then exit 0)
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/sidegate.js"]
CMD ["start"]
