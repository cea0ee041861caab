import path from 'node:path';
import express, { Request, Response } from 'express';
import { AppContext } from '../app/context';
import { SERVER_VERSION } from '../mcp/server';
import { DocumentedRouter, MountFamily, openApiDocument } from './openapi/generate';
import { RouteModule } from './routes/module';

/** swagger-ui-dist's files this process serves at /docs/<name> (no CDN), and the init script. */
const ASSETS = new Map<string, string>([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['swagger-ui-standalone-preset.js', 'text/javascript; charset=utf-8'],
  ['favicon-32x32.png', 'image/png'],
  ['favicon-16x16.png', 'image/png'],
]);

/** Loads Swagger UI on /openapi.json: an external script, so the page's CSP needs no inline script. */
const INIT_JS = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Knowledge base service: API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

/**
 * Swagger UI's one inline style sheet: the colours of its logo (an SVG it renders inline). The
 * browser test of /docs (test/e2e/apiDocs.test.ts) fails should another version change it.
 */
const LOGO_STYLE_HASH = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

/**
 * No inline script, and no inline style sheet but the logo's (by its hash): Swagger UI's styles
 * come from its CSS file; it sets style attributes on elements (allowed by `style-src-attr`
 * only) and shows data: images.
 */
const CSP = `default-src 'none'; script-src 'self'; style-src 'self'; style-src-elem 'self' ${LOGO_STYLE_HASH}; style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

function assetDir(): string {
  // swagger-ui-dist's own resolver (absolute-path.js): its directory in node_modules.
  return path.dirname(require.resolve('swagger-ui-dist/package.json'));
}

/** The documented routers of the app's modules, as createApp mounts them. */
export function documentedRouters(modules: RouteModule[]): DocumentedRouter[] {
  const out: DocumentedRouter[] = [];
  for (const m of modules) {
    for (const family of ['v1', 'api', 'root'] as MountFamily[]) if (m[family] && m.docs) out.push({ family, docs: m.docs });
  }
  return out;
}

/** GET /openapi.json, GET /docs and its assets. */
export function apiDocsRoutes(app: express.Express, ctx: AppContext, modules: RouteModule[]): void {
  let body: string | undefined;
  app.get('/openapi.json', (_req: Request, res: Response) => {
    body ??= JSON.stringify(openApiDocument(documentedRouters(modules), { version: SERVER_VERSION, serverUrl: ctx.config.baseUrl }));
    res.type('application/json').setHeader('Cache-Control', 'no-cache');
    res.send(body);
  });
  app.get('/docs', (_req: Request, res: Response) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.type('text/html').send(PAGE);
  });
  const dir = assetDir();
  app.get('/docs/:asset', (req: Request, res: Response) => {
    const name = String(req.params.asset);
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (name === 'init.js') {
      res.type('text/javascript').send(INIT_JS);
      return;
    }
    const type = ASSETS.get(name);
    if (!type) {
      res.status(404).json({ error: 'NOT_FOUND', message: 'No such file.' });
      return;
    }
    res.setHeader('Content-Type', type);
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.sendFile(path.join(dir, name));
  });
}
