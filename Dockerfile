FROM node:20-bookworm
# g++/make/python3 build the native DSP addon and Opus during npm ci; espeak-ng voices the echo engine.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ espeak-ng && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY native ./native
RUN npm ci
COPY . .
ENV PARLEY_HOST=0.0.0.0 PARLEY_DATA_DIR=/data
VOLUME /data
# HTTP API, realtime WebSocket, SIP (UDP and TCP), RTP range
EXPOSE 3000 3001 5060/udp 5060/tcp 40000-49999/udp
CMD ["npm", "start"]
