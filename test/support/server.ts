import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

export interface TestServer {
  url: string;
  dataDir: string;
  proc: ChildProcess;
  /** Everything the server wrote to stdout/stderr so far (its logs). */
  output(): string;
  stop(): Promise<void>;
  /** kill -9: no chance to flush anything. */
  crash(): Promise<void>;
}

/**
 * Start the real server (compiled by jest's globalSetup) as a child process on a free
 * port with its own data dir. Pass the same dataDir again to restart on the same data.
 */
export async function startServer(env: Record<string, string> = {}, dataDir?: string): Promise<TestServer> {
  const dir = dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'kb-test-'));
  const proc = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    cwd: root,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      KB_DATA_DIR: dir,
      KB_ANNOUNCE_PORT: '1',
      KB_LOG_LEVEL: 'info',
      KB_JWT_SECRET: 'test-secret-test-secret-test-secret',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 30_000);
    const onData = () => {
      const m = /KB_LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout?.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  return {
    url: `http://127.0.0.1:${port}`,
    dataDir: dir,
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
    crash: async () => {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** A small JSON client over fetch. */
export function client(base: string, token?: string) {
  const call = async <T = any>(method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> => {
    const res = await fetch(base + p, {
      method,
      headers: {
        ...(body !== undefined && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : body instanceof FormData ? body : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed as T, headers: res.headers, text };
  };
  return {
    get: <T = any>(p: string, h?: Record<string, string>) => call<T>('GET', p, undefined, h),
    post: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => call<T>('POST', p, b ?? {}, h),
    put: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => call<T>('PUT', p, b ?? {}, h),
    patch: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => call<T>('PATCH', p, b ?? {}, h),
    delete: <T = any>(p: string, h?: Record<string, string>) => call<T>('DELETE', p, undefined, h),
    raw: call,
  };
}

let counter = 0;
/** Register and log in a fresh user; returns a client carrying its access token. */
export async function signUp(base: string, name = 'User') {
  counter += 1;
  const email = `${name.toLowerCase().replace(/\W/g, '')}${counter}-${Date.now()}@example.com`;
  const anon = client(base);
  const reg = await anon.post('/v1/auth/register', { email, password: 'correct horse battery', name });
  if (reg.status !== 201) throw new Error(`register failed: ${reg.status} ${reg.text}`);
  const login = await anon.post('/v1/auth/login', { email, password: 'correct horse battery' });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return { id: reg.body.id as string, email, token: login.body.accessToken as string, refreshToken: login.body.refreshToken as string, api: client(base, login.body.accessToken) };
}

/**
 * Confirm an account's address from the verification mail in the server's outbox (the
 * embedded default, no KB_SMTP_URL): a second factor is set up on confirmed accounts only.
 */
export async function confirmAddress(server: Pick<TestServer, 'url' | 'dataDir'>, email: string): Promise<void> {
  const dir = path.join(server.dataDir, 'outbox');
  const unQp = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  for (let i = 0; i < 200; i++) {
    const mails = (fs.existsSync(dir) ? fs.readdirSync(dir) : []).map((f) => unQp(fs.readFileSync(path.join(dir, f), 'utf8'))).filter((r) => r.includes(`To: ${email}`));
    const token = mails.map((m) => /\/verify-email\?token=([A-Za-z0-9%._-]+)/.exec(m)?.[1]).find((t) => t !== undefined);
    if (token) {
      const r = await client(server.url).post('/v1/auth/verify-email', { token: decodeURIComponent(token) });
      if (r.status !== 200) throw new Error(`verify-email failed: ${r.status} ${r.text}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no verification mail to ${email} in ${dir}`);
}
