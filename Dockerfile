# The winfleet operator image, for people who build with Docker (or another engine that reads a
# Dockerfile). `make image` is the tested path: it builds the image without any container engine,
# reproducibly (same commit, same digest), and the tests run what it builds read-only as uid 65532
# (scripts/build-image.ts, scripts/build-image.e2e.test.ts). This file is untested and not
# byte-for-byte the same image: it makes the same bundle and runs it the same way, on Google's
# distroless Node 24 image (Debian 12 glibc, no shell, user nonroot = 65532) instead of Node's
# official Linux binary with only the three libraries it needs.
#
#   docker build -t winfleet/operator:dev \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg VERSION=0.1.0 .
#
# Run it with a read-only root file system and an emptyDir at /tmp (the only path it may write).

# Build stage: only the bundle (src/operator/main.ts and what it imports, one CommonJS file).
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: the bundle needs only esbuild's JavaScript API and its platform package.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN node scripts/build-image.ts --bundle-only /out/winfleet-operator.cjs

# Final stage: Node 24 and the bundle; no shell, no package manager, no node_modules.
FROM gcr.io/distroless/nodejs24-debian12:nonroot
ARG REVISION=unknown
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title=winfleet-operator \
      org.opencontainers.image.version=$VERSION \
      org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/winfleet-operator.cjs /app/winfleet-operator.cjs
# Numeric, so that a Pod's runAsNonRoot can check it.
USER 65532:65532
WORKDIR /
# The same memory settings as `make image` (IMAGE_ENV and IMAGE_NODE_FLAGS in
# scripts/build-image.ts; scripts/build-image.test.ts checks they agree; docs/operator-memory.md).
ENV MALLOC_ARENA_MAX=2
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=2", "/app/winfleet-operator.cjs"]
