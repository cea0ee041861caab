// Run with node against the compiled server (dist/): builds the app on a throw-away data dir
// and prints what it registers, walked from express's router stack, and checks every request
// example of the API description against the codec it documents. Used by test/http/openapi.test.ts
// (jest runs CommonJS and cannot load some of the app's ES-module dependencies in-process).
require('reflect-metadata');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const pino = require('pino');
const dist = path.resolve(__dirname, '..', '..', 'dist', 'src');
const { buildContainer, closeContainer } = require(path.join(dist, 'container'));
const { loadConfig } = require(path.join(dist, 'config', 'config'));
const { createApp } = require(path.join(dist, 'http', 'app'));
const { routeModules } = require(path.join(dist, 'http', 'routes'));
const { decode } = require(path.join(dist, 'http', 'codecs'));

// The web console's pages (/app, and / redirecting there) are HTML for people, not the API.
const CONSOLE = new Set(['/app']);

function registered(stack) {
  const out = new Set();
  let prefix;
  for (const layer of stack) {
    if (layer.handle && layer.handle.mountPath !== undefined && Array.isArray(layer.handle.routers)) {
      // The modules' routers at one mount path, in one layer (http/routes/module.ts `mounted`).
      const p = layer.handle.mountPath === '/' ? '' : layer.handle.mountPath;
      for (const router of layer.handle.routers) for (const r of router.stack) if (r.route) for (const m of Object.keys(r.route.methods)) out.add(`${m === '_all' ? 'POST' : m.toUpperCase()} ${p}${r.route.path}`);
      continue;
    }
    if (layer.handle && layer.handle.mountPath !== undefined) {
      prefix = layer.handle.mountPath === '/' ? '' : layer.handle.mountPath;
      continue;
    }
    const methods = (route) => Object.keys(route.methods).map((m) => (m === '_all' ? 'POST' : m.toUpperCase()));
    if (layer.route) {
      if (layer.route.path === '/') continue; // the redirect to the console
      for (const m of methods(layer.route)) out.add(`${m} ${layer.route.path}`);
    } else if ((layer.name === 'router' || layer.handle.router) && layer.handle.stack) {
      // A module's router is mounted behind a check of the path (http/routes/module.ts `entered`): its own stack.
      if (prefix === undefined) throw new Error('a router mounted without mountedAt');
      if (CONSOLE.has(prefix)) {
        prefix = undefined;
        continue;
      }
      for (const r of layer.handle.stack) if (r.route) for (const m of methods(r.route)) out.add(`${m} ${prefix}${r.route.path}`);
      prefix = undefined;
    }
  }
  return [...out];
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-walk-'));
  const { di, ctx } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_JWT_SECRET: 'test-secret-test-secret-test-secret' }), pino({ level: 'silent' }));
  try {
    const app = createApp(ctx);
    const routes = registered(app.router.stack);
    const examples = [];
    for (const m of routeModules.map((f) => f(ctx))) {
      for (const [key, d] of Object.entries(m.docs || {})) {
        if (d.example === undefined) continue;
        let problem = null;
        try {
          if (!d.body) throw new Error('an example without a body codec');
          decode(d.body, d.example);
        } catch (e) {
          problem = e.message;
        }
        examples.push({ key, problem });
      }
    }
    process.stdout.write(JSON.stringify({ routes, examples }));
  } finally {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
