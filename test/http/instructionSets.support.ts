import { client, signUp } from '../support/server';

type Api = ReturnType<typeof client>;

/** Deterministic prose of about `bytes` ASCII bytes (UTF-8 bytes = characters), marked so it can be found. */
export function prose(marker: string, bytes: number): string {
  const words = ['context', 'model', 'answer', 'policy', 'review', 'careful', 'source', 'section', 'detail', 'summary', 'example', 'customer'];
  const lines: string[] = [`${marker}`];
  let size = marker.length + 1;
  let i = 0;
  while (size < bytes) {
    const sentence: string[] = [];
    for (let w = 0; w < 12; w++) sentence.push(words[(i * 7 + w * 3) % words.length]);
    i++;
    const line = `${sentence.join(' ')}.`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

/** Upload a text or Markdown file; answers the document id. */
export async function upload(api: Api, workspaceId: string, filename: string, content: string, fields: Record<string, string> = {}): Promise<string> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([content], { type: filename.endsWith('.md') ? 'text/markdown' : 'text/plain' }), filename);
  const r = await api.post(`/v1/workspaces/${workspaceId}/documents`, form);
  if (r.status !== 201) throw new Error(`upload failed: ${r.status} ${r.text}`);
  return r.body.id as string;
}

/** Poll until the document reaches `status` (processing is asynchronous); answers the document. */
export async function waitForStatus(api: Api, workspaceId: string, documentId: string, status = 'VERIFIED'): Promise<any> {
  for (let i = 0; i < 1200; i++) {
    const r = await api.get(`/v1/workspaces/${workspaceId}/documents/${documentId}`);
    if (r.status === 200 && r.body.processingStatus === status) return r.body;
    if (r.status === 200 && r.body.processingStatus !== 'PENDING' && r.body.processingStatus !== 'PROCESSING') {
      throw new Error(`document ${documentId} ended ${r.body.processingStatus}, expected ${status}: ${r.text}`);
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`document ${documentId} never reached ${status}`);
}

/** Upload and wait for VERIFIED; answers {id, sizeBytes, title}. */
export async function verifiedDoc(api: Api, workspaceId: string, filename: string, content: string, fields: Record<string, string> = {}) {
  const id = await upload(api, workspaceId, filename, content, fields);
  const d = await waitForStatus(api, workspaceId, id);
  return { id, sizeBytes: d.sizeBytes as number, title: d.title as string };
}

/** An owner with a workspace, plus an ADMIN, a MEMBER and a stranger. */
export async function team(base: string) {
  const owner = await signUp(base, 'Owner');
  const admin = await signUp(base, 'Admin');
  const member = await signUp(base, 'Member');
  const stranger = await signUp(base, 'Stranger');
  const ws = await owner.api.post('/v1/workspaces', { name: 'Prompts' });
  if (ws.status !== 201) throw new Error(`workspace: ${ws.text}`);
  const workspaceId = ws.body.id as string;
  for (const [u, role] of [
    [admin, 'ADMIN'],
    [member, 'MEMBER'],
  ] as const) {
    const r = await owner.api.post(`/v1/workspaces/${workspaceId}/members`, { userId: u.id, role });
    if (r.status !== 201) throw new Error(`member: ${r.text}`);
  }
  return { owner, admin, member, stranger, workspaceId };
}

/** Poll `probe` until it answers true (asynchronous reactions such as the cleanup service). */
export async function eventually(probe: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await probe()) return;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`never happened: ${what}`);
}
