# Parley's production image (docs/operations.md, "Container image").
#
# Two stages on one Debian release and one Node major, so the native code built in the first (the DSP addon, Opus,
# and uWebSockets.js's prebuilt binary picked by Node's ABI) runs in the second:
# - build: compilers, `npm ci` (which builds native/ through the package's install script), then the dev
#   dependencies pruned away;
# - runtime: the slim image with espeak-ng (the echo and scripted engines' speech, voice samples) and tini, the
#   pruned node_modules, the built addon and the sources. No compiler, no dev dependency, not root.
#
# Parley runs its TypeScript through tsx, a runtime dependency, exactly as `npm start` does (the media workers load
# their entry through tsx too: src/workers/worker-pool.ts); there is no separate compiled output to drift from the
# sources. The process is `node`, under tini as PID 1: SIGTERM from `docker stop` reaches node, which ends and saves
# live conversations before it exits, and tini reaps the espeak-ng children.
ARG NODE_MAJOR=20
ARG DEBIAN_RELEASE=bookworm

FROM node:${NODE_MAJOR}-${DEBIAN_RELEASE} AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# node-gyp takes Node's headers from the image rather than downloading them.
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
COPY native ./native
RUN npm ci --no-audit --no-fund \
  && npm prune --omit=dev --no-audit --no-fund \
  && test -f native/build/Release/parley_dsp.node \
  && node -e "require('@discordjs/opus')"

FROM node:${NODE_MAJOR}-${DEBIAN_RELEASE}-slim AS runtime
RUN apt-get update \
  && apt-get install -y --no-install-recommends espeak-ng tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/native/build/Release/parley_dsp.node ./native/build/Release/parley_dsp.node
COPY package.json package-lock.json tsconfig.json ./
COPY sip ./sip
COPY src ./src
# The data directory (embedded database, recordings, speech cache) belongs to the unprivileged user that runs Parley.
RUN mkdir -p /data && chown node:node /data
ENV NODE_ENV=production \
  PARLEY_HOST=0.0.0.0 \
  PARLEY_HTTP_PORT=3000 \
  PARLEY_WS_PORT=3001 \
  PARLEY_SIP_PORT=5060 \
  PARLEY_RTP_PORT_MIN=40000 \
  PARLEY_RTP_PORT_MAX=49999 \
  PARLEY_DATA_DIR=/data
USER node
VOLUME ["/data"]
# HTTP API, realtime WebSocket, SIP (UDP and TCP), RTP (PARLEY_RTP_PORT_MIN..MAX).
EXPOSE 3000/tcp 3001/tcp 5060/udp 5060/tcp 40000-49999/udp
# Liveness: GET /healthz on the control plane (fetch is built into Node 20; the slim image has no curl).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PARLEY_HTTP_PORT || 3000) + '/healthz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--import", "tsx", "src/main.ts"]
