import { spawn } from 'node:child_process';

/**
 * Runs `code` in a child node process (with `args`), waits until it prints a line starting
 * with `said`, then kills it with SIGKILL (as a crash would) and waits for its exit. Returns
 * what it printed. Rejects when it exits before saying it.
 */
export async function runUntilSaidThenKill(code: string, args: string[], said: string): Promise<string> {
  const child = spawn(process.execPath, ['-e', code, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const out = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (b: Buffer) => {
      text += b.toString();
      if (text.includes(said)) resolve(text.trim());
    });
    child.on('exit', (c) => reject(new Error(`child exited with ${c} before saying "${said}"`)));
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return out;
}
