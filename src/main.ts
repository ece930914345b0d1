// Entry: config -> store -> control plane -> workers -> SIP (DESIGN.md, "Layout").
import { ConfigError, loadSettings } from './config.js';
import { createLogger } from './log.js';

const log = createLogger();
try {
  const settings = loadSettings();
  log.info({ httpPort: settings.PARLEY_HTTP_PORT }, 'parley configured');
} catch (err) {
  if (err instanceof ConfigError) {
    log.fatal({ problems: err.problems }, err.message);
    process.exit(1);
  }
  throw err;
}
