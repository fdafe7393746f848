# syntax=docker/dockerfile:1
# sidegate: authentication gateway sidecar.
#   docker build -t sidegate:0.1.0 .
#   docker run --rm -p 8080:8080 -e SIDEGATE_SECRET_KEY="$(openssl rand -hex 32)" \
#     -e SIDEGATE_REDIS_URL=redis://host.docker.internal:6379 --stop-timeout 20 sidegate:0.1.0

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: dev dependencies and the TypeScript compiler, dist/ is all that leaves
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: "prepare" would build before the sources are copied; it runs below
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

# ---- runtime: production dependencies only, no compiler, no tests
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY static ./static
COPY gateway.yml ./gateway.yml
# uid/gid 1000 is the image's "node" user; numeric so Kubernetes' runAsNonRoot can verify it
USER 1000:1000
EXPOSE 8080 9090
# node, not curl (the slim image has none); SIDEGATE_PORT if listen.port was moved
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "require('http').get('http://127.0.0.1:'+(process.env.SIDEGATE_PORT||8080)+'/healthz',r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))"]
# exec form: node is PID 1 and receives SIGTERM itself (drain, then exit 0)
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/sidegate.js"]
CMD ["start"]
