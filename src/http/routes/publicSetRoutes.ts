import { RouteDocs } from '../openapi/routeDocs';
import { NextFunction, Request, Response } from 'express';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { joinRaw, publicSetContent } from '../../../queries/instructionSet/instructionSetQueries';
import { renderInstructionSetPage, SET_PAGE_CSP } from '../../views/instructionSetPage';
import { byIp, consumeRateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { UUID_PATTERN } from '../../domain/ids';

const UUID = UUID_PATTERN;

/** The API description of these routes. */
export const publicSetDocs: RouteDocs = {
  'GET /s/:id': { summary: 'A public instruction set as a page', produces: 'text/html' },
  'GET /s/:id/raw': { summary: 'A public instruction set as text', produces: 'text/plain' },
};
const notFound = () => new DomainError('NOT_FOUND', 'Instruction set not found or not public.');

/**
 * {app_url}/s/:id (HTML) and /s/:id/raw (text/plain) of public sets. /s/:id is shared with
 * search links: when :id is not a public set this router steps aside (next()) and the
 * search-link router, mounted after it, answers.
 */
export function publicSetRoutes(ctx: AppContext): RouteModule {
  const root = router();
  const htmlLimiter = ctx.rateLimiter({ keyPrefix: 'public-set:html', points: 60, durationSeconds: 60 });
  const rawLimiter = ctx.rateLimiter({ keyPrefix: 'public-set:raw', points: 30, durationSeconds: 60 });

  const contentOf = async (id: string) => (UUID.test(id) ? publicSetContent(ctx, id.toLowerCase()) : null);

  root.get('/s/:id', async (req: Request, res: Response, next: NextFunction) => {
    const content = await contentOf(String(req.params.id));
    if (!content) return next();
    await consumeRateLimit(ctx, htmlLimiter, 60, byIp(req), res, 'public-set-html');
    // The page links its raw text relatively (./<id>/raw): one canonical address, without a trailing slash.
    const pathOnly = req.originalUrl.split('?')[0];
    if (pathOnly.endsWith('/')) return res.redirect(308, pathOnly.replace(/\/+$/, ''));
    const { set, parts } = content;
    const html = await renderInstructionSetPage({
      id: set.id,
      workspaceId: set.workspaceId,
      name: set.name,
      description: set.description,
      updatedAt: set.updatedAt,
      // What the page serves: documents not VERIFIED now are left out.
      totalSizeBytes: parts.reduce((n, p) => n + p.sizeBytes, 0),
      documents: parts.map((p) => ({ title: p.title, purpose: p.purpose, text: p.text, format: p.format })),
    });
    res.setHeader('Content-Security-Policy', SET_PAGE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(html);
  });

  root.get('/s/:id/raw', async (req: Request, res: Response) => {
    await consumeRateLimit(ctx, rawLimiter, 30, byIp(req), res, 'public-set-raw');
    const content = await contentOf(String(req.params.id));
    if (!content) throw notFound();
    res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    res.type('text/plain; charset=utf-8').send(joinRaw(content.parts.map((p) => p.text)));
  });

  return { root, docs: publicSetDocs };
}
