import express, { NextFunction, Request, Response } from 'express';
import fs from 'node:fs';
import path from 'node:path';
import { router } from './routes/module';

/** Where `npm run build` puts the console (vite, web/vite.config.mjs): dist/web. */
export const CONSOLE_DIR = path.resolve(__dirname, '..', '..', 'web');

/**
 * The console's pages: strict CSP (no inline script or style: Vite emits external files),
 * never framed, no referrer. Scripts may only talk to this origin.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  next();
}

/**
 * GET /app/...: the single-page console. Files under /app/assets are served as built
 * (immutable, hashed names); any other path under /app answers index.html (never stored), so client-side
 * routes survive a reload (history fallback). Without a build, 404 with a hint.
 */
export function consoleRouter(dir: string = CONSOLE_DIR): express.Router {
  const r = router();
  r.use(securityHeaders);
  r.use('/assets', express.static(path.join(dir, 'assets'), { immutable: true, maxAge: '365d', index: false, fallthrough: false }));
  r.get(/.*/, (req, res) => {
    const index = path.join(dir, 'index.html');
    if (!fs.existsSync(index)) {
      res.status(404).type('text/plain').send('The web console is not built: run `npm run build`.');
      return;
    }
    // no-store, not no-cache (which lets a browser or proxy keep a copy and only revalidate it): this page is also
    // the answer to the mailed links' addresses, /app/reset-password?token=… and /app/accept-invitation?token=…,
    // and a stored copy keyed by such an address keeps the token. The shell itself holds no per-user state (the
    // data comes from the API, no-store too); it is small, and the hashed assets stay immutable.
    res.setHeader('Cache-Control', 'no-store');
    res.sendFile(index);
  });
  return r;
}
