import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const root = path.resolve(__dirname, '..', '..');

/** Run the compiled CLI on a data dir; resolves with the exit code instead of throwing. */
export async function cli(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [path.join(root, 'dist/src/cli.js'), ...args], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: dataDir, KB_LOG_LEVEL: 'silent', KB_JWT_SECRET: 'test-secret-test-secret-test-secret', ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
