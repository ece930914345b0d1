export * from './digest.js';
export * from './client.js';
export * from './server.js';
