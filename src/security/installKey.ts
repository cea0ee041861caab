import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const KEY_BYTES = 32;

function decodeKey(text: string, where: string): Buffer {
  const s = text.trim();
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(s) ? Buffer.from(s, 'base64') : Buffer.alloc(0);
  if (key.length !== KEY_BYTES) throw new Error(`${where} must be the base64 encoding of exactly ${KEY_BYTES} bytes (e.g. \`openssl rand -base64 32\`).`);
  return key;
}

/**
 * A 32-byte key of this install: from the environment variable `envName`, else read from, or
 * created once (0600) as, `fileName` in the data dir. A malformed key is an error, never
 * silently replaced: that would orphan everything sealed or signed under it.
 */
export function loadInstallKey(dataDir: string, envName: string, fileName: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const fromEnv = env[envName];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return decodeKey(fromEnv, envName);
  const file = path.join(dataDir, fileName);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    try {
      fs.writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // Another process created it first: use theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return decodeKey(fs.readFileSync(file, 'utf8'), file);
}
