/**
 * The server side of `bench/httpFloor.ts`: the least a durable command over HTTP can cost on
 * this machine, built up one layer at a time (the stage is the first argument). It answers
 * `PUT /v1/workspaces/:id/tags/:tagId` with a JSON body as the service's bench route is called:
 *
 * - `bare`: node:http, the body read and parsed, a JSON answer;
 * - `jwt`: + the bearer token's HS256 signature checked (a cached KeyObject, as the service does);
 * - `append`: + one row appended to a SQLite log per request, group-committed (WAL,
 *   synchronous=FULL: fsync before the answer), as durable as the service's log;
 * - `express`: the same as `append`, routed by express 5 (one route, no other middleware);
 * - `express-prototypes`: the same, with node making requests and responses with the app's
 *   prototypes (`src/http/expressServer.ts`, as the service does), so express changes none.
 *
 * Prints `FLOOR_LISTENING <port>` once it listens.
 */
import Database from 'better-sqlite3';
import express from 'express';
import jwt from 'jsonwebtoken';
import { createSecretKey } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expressServerOptions } from '../src/http/expressServer';

export const FLOOR_STAGES = ['bare', 'jwt', 'append', 'express', 'express-prototypes'] as const;
export type FloorStage = (typeof FLOOR_STAGES)[number];
/** The signing secret of the floor's tokens (a bench secret, nothing else uses it). */
export const FLOOR_SECRET = 'floor-bench-secret-0123456789abcdef';

function serve(stage: FloorStage): void {
  const key = createSecretKey(Buffer.from(FLOOR_SECRET, 'utf8'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-floor-'));
  const db = new Database(path.join(dir, 'log.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, data TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO events (stream, data) VALUES (?, ?)');
  // Group commit: the appends of one turn of the event loop commit (and fsync) together.
  let queue: { stream: string; data: string; done: () => void }[] = [];
  const commit = db.transaction((rows: typeof queue) => {
    for (const r of rows) insert.run(r.stream, r.data);
  });
  const append = (stream: string, data: string): Promise<void> =>
    new Promise((done) => {
      queue.push({ stream, data, done });
      if (queue.length === 1) {
        setImmediate(() => {
          const rows = queue;
          queue = [];
          commit(rows);
          for (const r of rows) r.done();
        });
      }
    });
  const handle = async (workspaceId: string, tagId: string, body: string, authorization: string | undefined): Promise<{ status: number; json: string }> => {
    if (stage !== 'bare') {
      try {
        jwt.verify((authorization ?? '').replace(/^Bearer /, ''), key, { algorithms: ['HS256'] });
      } catch {
        return { status: 401, json: '{"error":{"code":"UNAUTHORIZED"}}' };
      }
    }
    const input = JSON.parse(body) as { name?: string };
    if (stage !== 'bare' && stage !== 'jwt') {
      await append(`workspace-${workspaceId}`, JSON.stringify({ type: 'TagUpdated', data: { workspaceId, tagId, name: input.name } }));
    }
    return { status: 200, json: JSON.stringify({ id: tagId, name: input.name }) };
  };
  const readBody = (req: http.IncomingMessage, then: (body: string) => void) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => then(body));
  };
  let server: http.Server;
  if (stage === 'express' || stage === 'express-prototypes') {
    const app = express();
    app.put('/v1/workspaces/:id/tags/:tagId', (req, res) => {
      readBody(req, (body) => {
        handle(req.params.id, req.params.tagId, body, req.headers.authorization).then(
          (out) => res.status(out.status).type('json').send(out.json),
          () => res.status(400).end(),
        );
      });
    });
    server = http.createServer(stage === 'express-prototypes' ? expressServerOptions(app) : {}, app);
  } else {
    const route = /^\/v1\/workspaces\/([^/]+)\/tags\/([^/]+)$/;
    server = http.createServer((req, res) => {
      const m = req.method === 'PUT' ? route.exec(req.url ?? '') : null;
      if (!m) {
        res.writeHead(404).end();
        return;
      }
      readBody(req, (body) => {
        handle(m[1], m[2], body, req.headers.authorization).then(
          (out) => res.writeHead(out.status, { 'content-type': 'application/json' }).end(out.json),
          () => res.writeHead(400).end(),
        );
      });
    });
  }
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`FLOOR_LISTENING ${typeof address === 'object' && address ? address.port : 0}\n`);
  });
  const stop = () => {
    server.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
}

if (require.main === module) {
  const stage = process.argv[2] as FloorStage;
  if (!FLOOR_STAGES.includes(stage)) throw new Error(`stage must be one of ${FLOOR_STAGES.join(', ')}`);
  serve(stage);
}
