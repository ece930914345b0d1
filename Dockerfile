FROM node:20-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ espeak-ng && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY native ./native
RUN npm ci --omit=dev=false
COPY . .
ENV PARLEY_HOST=0.0.0.0 PARLEY_DATA_DIR=/data
VOLUME /data
EXPOSE 3000 3001 5060/udp 5060/tcp
CMD ["npm", "start"]
