# The gateway in a container: the one-file binary (`npm run build:binary`, docs/binary.md) on
# Debian slim, data in the /data volume. Build and run:
#
#   docker build -t shardgate .
#   docker run -p 8787:8787 -p 8788:8788 -v shardgate-data:/data \
#     -e SHARDGATE_ACCESS_KEY_ID=admin -e SHARDGATE_SECRET_ACCESS_KEY="$(openssl rand -hex 24)" shardgate
#
# It listens on 0.0.0.0 inside the container, so it refuses the local default keys: set your own.
# A bind mount for /data must be writable by uid 10001 (`chown 10001 DIR`); a named volume is.

# 1. Build the binary: Node and npm only (the built core is committed; no Rust).
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY . .
RUN npm run build:binary

# 2. Run it: glibc and util-linux (setpriv, which ties workerd to the binary) are all it needs.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin shardgate \
 && mkdir -p /data && chown shardgate:shardgate /data
COPY --from=build /src/dist/shardgate /usr/local/bin/shardgate
USER shardgate
WORKDIR /data
VOLUME /data
EXPOSE 8787 8788
# Flags after the image name are added to these (`docker run … shardgate --port 9000`); the CLI:
# `docker run --entrypoint shardgate … status --endpoint …`.
ENTRYPOINT ["shardgate", "serve", "--ip", "0.0.0.0", "--data-dir", "/data"]
