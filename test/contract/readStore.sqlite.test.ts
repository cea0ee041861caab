import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { readStoreContract } from './readStore.contract';

const dir = mkdtempSync(path.join(tmpdir(), 'kb-rs-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

readStoreContract('SqliteReadStore', async () => new SqliteReadStore(path.join(dir, `${randomUUID()}.db`)));
