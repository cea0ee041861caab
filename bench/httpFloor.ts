/**
 * `npm run bench -- floor`: what a durable command over HTTP costs on this machine before any of
 * the service's own work, layer by layer (bench/httpFloorServer.ts: bare node:http, + a JWT
 * check, + a group-committed fsynced SQLite append, + express 5's routing, + the requests made
 * with the app's prototypes as the service does), under the same load
 * as the service's bench (16 clients, autocannon in this process, the server in its own). It
 * tells how much of the service's CPU per command is the platform's and what rate the main
 * thread could reach at best with each layer; compare with `core --parts http`.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { createSecretKey } from 'node:crypto';
import { announcedPort, cpuMsOf, threadCpuMsOf } from './core';
import { FLOOR_SECRET, FLOOR_STAGES, FloorStage } from './httpFloorServer';

const load = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

async function startFloor(stage: FloorStage): Promise<{ url: string; stop: () => Promise<void>; pid: number | undefined }> {
  const proc = spawn(process.execPath, [path.join(__dirname, 'httpFloorServer.js'), stage], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await announcedPort(proc, 'FLOOR_LISTENING');
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    stop: () =>
      new Promise((resolve) => {
        proc.removeAllListeners('exit');
        proc.on('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

function load16(url: string, token: string, seconds: number): Promise<autocannon.Result> {
  let n = 0;
  return autocannon({
    url,
    connections: 16,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          method: 'PUT',
          path: `/v1/workspaces/w${n % 16}/tags/t${n++ % 16}`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ name: `tag-${n}` }),
        }),
      },
    ],
  });
}

export async function benchHttpFloor(seconds = 6): Promise<void> {
  const token = jwt.sign({ sub: 'bench', sid: 'bench', typ: 'access' }, createSecretKey(Buffer.from(FLOOR_SECRET, 'utf8')), { algorithm: 'HS256', expiresIn: '1h' });
  console.log(`HTTP floor: PUT with a JSON body, 16 clients, ${seconds} s per stage (the service's own figure: core --parts http)`);
  for (const stage of FLOOR_STAGES) {
    const server = await startFloor(stage);
    try {
      await load16(server.url, token, 1); // warm-up (JIT)
      const cpuBefore = cpuMsOf(server.pid);
      const mainBefore = threadCpuMsOf(server.pid).get('main');
      const clientBefore = process.cpuUsage();
      const r = await load16(server.url, token, seconds);
      const cpuAfter = cpuMsOf(server.pid);
      const mainAfter = threadCpuMsOf(server.pid).get('main');
      const client = process.cpuUsage(clientBefore);
      const ok = r['2xx'];
      const perRequest = (ms: number | undefined, before: number | undefined) => (ms !== undefined && before !== undefined && ok > 0 ? Math.round(((ms - before) * 1000) / ok) : NaN);
      const serverUs = perRequest(cpuAfter, cpuBefore);
      const mainUs = perRequest(mainAfter, mainBefore);
      const clientUs = ok > 0 ? Math.round((client.user + client.system) / ok) : NaN;
      console.log(
        `  ${stage.padEnd(19)} ${Math.round(ok / seconds)} requests/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}; server CPU ${serverUs} µs/request (main thread ${mainUs}: at most ${Math.round(1e6 / mainUs)}/s on one event loop), client ${clientUs} µs/request; load average ${load()}`,
      );
    } finally {
      await server.stop();
    }
  }
}

if (require.main === module) {
  const i = process.argv.indexOf('--seconds');
  benchHttpFloor(i >= 0 ? Number(process.argv[i + 1]) : undefined).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
