import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { createApp } from '../../src/http/app';
import { decode, IntFromString } from '../../src/http/codecs';
import { registerUser } from '../../commands/user/userCommands';
import { createWorkspace } from '../../commands/workspace/createWorkspace';
import { createSearchLink } from '../../commands/searchLink/createSearchLink';

const logger = pino({ level: 'silent' });

describe('request integers are written canonically', () => {
  it.each(['5', '0', '-3', '50'])('%j is accepted', (v) => expect(decode(IntFromString, v)).toBe(Number(v)));
  it.each([' 5 ', '5 ', ' 5', '05', '+5', '5.0', '1e1', '', '0x5', '٥'])('%j is refused with a VALIDATION_ERROR', (v) => {
    expect(() => decode(IntFromString, v)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
  });
});

/**
 * GET /public/:token/search takes `q`, `limit` (an integer 1..50, written canonically) and
 * `tags` (comma-separated tag ids, as the spec has it). Anything else is a 400
 * VALIDATION_ERROR naming the parameter, never ignored and never a 500.
 */
describe('GET /public/:token/search: its query parameters', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  let server: http.Server;
  let base: string;
  let token: string;
  const cc = (actorId: string | null): CommandContext => ({ actorId, authMethod: 'session', correlationId: randomUUID(), now: new Date() });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-pubq-'));
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main', KB_RATE_LIMITS: 'off' }), logger));
    await ctx.runner.start();
    const owner = (await registerUser(ctx, cc(null), { email: `o-${randomUUID()}@example.com`, password: 'correct horse battery', name: 'o', emailVerified: true })).user;
    const ws = await createWorkspace(ctx, cc(owner.userId), { name: 'w' });
    expect(await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 20_000)).toBe(true);
    token = (await createSearchLink(ctx, cc(owner.userId), ws.id, () => ({ name: 'l' }))).token;
    expect(await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 20_000)).toBe(true);
    server = http.createServer(createApp(ctx));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server?.close(() => r()));
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const get = async (query: string) => {
    const r = await fetch(`${base}/public/${token}/search?${query}`);
    return { status: r.status, body: (await r.json()) as { error: string; message: string } };
  };

  it('the canonical form is served (control)', async () => {
    const r = await get('q=refund&limit=5');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ results: [], totalResults: 0 });
  });

  it.each(['tags[]=x', 'tags[]=x&tags[]=y', 'tags[0]=x', 'tag=x'])('q=refund&%s: 400 VALIDATION_ERROR naming the parameter', async (extra) => {
    const r = await get(`q=refund&${extra}`);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'VALIDATION_ERROR', message: expect.any(String) });
    expect(r.body.message).toContain(extra.split('=')[0]);
  });

  it.each(['%205%20', '5%20', '%205', '05', '%2B5', '5.0', '+5'])('limit=%s: 400 VALIDATION_ERROR naming limit', async (limit) => {
    const r = await get(`q=refund&limit=${limit}`);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'VALIDATION_ERROR', message: expect.any(String) });
    expect(r.body.message).toContain('limit');
  });
});
