/**
 * Compares builds of the server under the same load at the same time: each build's server runs
 * beside the others, each with 16 clients renaming tags (the durable-commands bench of `core`),
 * for several rounds. On a machine shared with other work, one build measured after another
 * meets different contention; measured together they meet the same. Prints, per round and
 * overall, each build's rate and its server's CPU per command (all threads, and the main
 * thread, from /proc).
 *
 *   node dist/bench/httpCompare.js [--rounds 5] [--seconds 8] before=/path/to/old/dist/src/main.js after=dist/src/main.js
 *
 * (Copy a build's dist/ to a directory inside the repository, e.g. .tmp/before/dist, so that its
 * node_modules resolve and its worker threads find their files.)
 */
import fs from 'node:fs';
import os from 'node:os';
import { ChildProcess } from 'node:child_process';
import { cpuMsOf, renameTags, seedTagBench, startServer, TagBenchSeed, threadCpuMsOf, tmp } from './core';

interface Build {
  name: string;
  main: string;
}

interface Running extends Build {
  url: string;
  proc: ChildProcess;
  dir: string;
  seed: TagBenchSeed;
  commands: number;
  cpuMs: number;
  mainMs: number;
}

function parseArgs(args: string[]): { rounds: number; seconds: number; builds: Build[] } {
  const valueOf = (name: string, fallback: number): number => {
    const i = args.indexOf(name);
    const v = i >= 0 ? Number(args[i + 1]) : fallback;
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: a whole number, at least 1`);
    return v;
  };
  const builds = args
    .filter((a) => a.includes('=') && !a.startsWith('-'))
    .map((a) => ({ name: a.slice(0, a.indexOf('=')), main: a.slice(a.indexOf('=') + 1) }));
  for (const b of builds) if (!fs.existsSync(b.main)) throw new Error(`${b.name}: no file ${b.main}`);
  if (builds.length < 1) throw new Error('name builds to compare: before=PATH/dist/src/main.js after=dist/src/main.js');
  return { rounds: valueOf('--rounds', 5), seconds: valueOf('--seconds', 8), builds };
}

async function main(): Promise<void> {
  const { rounds, seconds, builds } = parseArgs(process.argv.slice(2));
  const servers: Running[] = [];
  try {
    for (const b of builds) {
      const dir = tmp('kb-bench-compare-');
      const { url, proc } = await startServer(dir, b.main);
      servers.push({ ...b, url, proc, dir, seed: await seedTagBench(url), commands: 0, cpuMs: 0, mainMs: 0 });
    }
    await Promise.all(servers.map((s) => renameTags(s.url, s.seed, 16, 2))); // warm-up
    for (let round = 1; round <= rounds; round++) {
      const before = servers.map((s) => ({ all: cpuMsOf(s.proc.pid) ?? 0, main: threadCpuMsOf(s.proc.pid).get('main') ?? 0 }));
      const results = await Promise.all(servers.map((s) => renameTags(s.url, s.seed, 16, seconds)));
      const line = servers.map((s, i) => {
        const ok = results[i]['2xx'];
        const all = (cpuMsOf(s.proc.pid) ?? 0) - before[i].all;
        const mainMs = (threadCpuMsOf(s.proc.pid).get('main') ?? 0) - before[i].main;
        s.commands += ok;
        s.cpuMs += all;
        s.mainMs += mainMs;
        const perCommand = ok > 0 ? `server CPU ${Math.round((all / ok) * 1000)} µs/command (main thread ${Math.round((mainMs / ok) * 1000)})` : 'no command answered';
        return `${s.name} ${Math.round(ok / results[i].duration)} commands/s, p99 ${results[i].latency.p99} ms, ${perCommand}, non-2xx ${results[i].non2xx}`;
      });
      console.log(`round ${round}, load average ${os.loadavg()[0].toFixed(2)}: ${line.join(' | ')}`);
    }
    console.log(
      `overall: ${servers.map((s) => `${s.name} server CPU ${s.commands ? Math.round((s.cpuMs / s.commands) * 1000) : '-'} µs/command (main thread ${s.commands ? Math.round((s.mainMs / s.commands) * 1000) : '-'}), ${s.commands} commands`).join(' | ')}`,
    );
  } finally {
    for (const s of servers) {
      if (s.proc.exitCode === null && s.proc.signalCode === null) {
        const exited = new Promise((r) => s.proc.once('exit', r));
        s.proc.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
