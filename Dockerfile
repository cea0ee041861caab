# syntax=docker/dockerfile:1
# Build: compile TypeScript with dev dependencies.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY commands ./commands
COPY projections ./projections
COPY queries ./queries
COPY bench ./bench
RUN npx tsc -p tsconfig.build.json

# Production dependencies only (native modules such as better-sqlite3 are built here).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

# Run: no compiler, no dev dependencies, non-root.
FROM node:20-bookworm-slim AS run
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    KB_DATA_DIR=/data
WORKDIR /app
RUN groupadd --system kb && useradd --system --gid kb --home-dir /app kb \
 && mkdir -p /data && chown kb:kb /data
COPY --from=deps --chown=kb:kb /app/node_modules ./node_modules
COPY --from=build --chown=kb:kb /app/dist ./dist
COPY --chown=kb:kb package.json ./
USER kb
VOLUME ["/data"]
EXPOSE 3000
CMD ["node", "dist/src/main.js"]
