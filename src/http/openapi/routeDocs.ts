import * as t from 'io-ts';

/** What the API description says of one route; the schemas come from the codecs that validate it. */
export interface RouteDoc {
  summary: string;
  description?: string;
  /** The JSON body codec (the one the handler decodes with). */
  body?: t.Mixed;
  /** A request body example (validated against `body` by the tests). */
  example?: unknown;
  /** The route also takes a multipart/form-data upload (`file` + fields). */
  multipart?: boolean;
  /** The query-string codec. */
  query?: t.Mixed;
  /** Signed in (bearer JWT or API key); default: true under /v1 and /api, false at the root. */
  auth?: boolean;
  /** The success response's body codec, when described (a test checks real answers against it). */
  response?: t.Mixed;
  /** Success status (default 200). */
  status?: number;
  /** Success content type (default application/json; `none` for an empty answer). */
  produces?: string;
  /**
   * Other answers of the route that are not the error envelope, by status: a route whose answer
   * differs by case (a redirect beside a JSON body), or /readyz's 503 (not ready, the same body).
   */
  otherSuccesses?: readonly SuccessDoc[];
  /** Headers of the success answer beyond the usual ones (name, what it says, its JSON schema). */
  responseHeaders?: readonly { name: string; description: string; schema: Readonly<Record<string, unknown>> }[];
}

/** One more success answer of a route: its status, what it means, its body (codec or content type; `none` for no body). */
export interface SuccessDoc {
  status: number;
  description: string;
  response?: t.Mixed;
  produces?: string;
}

/** One module's routes, keyed `METHOD /path` as the router registers them (`POST /workspaces/:id/documents`). */
export type RouteDocs = Readonly<Record<string, RouteDoc>>;
