import { client } from './server';

type Api = ReturnType<typeof client>;

/** Upload a text file (name decides .txt/.md) and wait, bounded, until it is VERIFIED. */
export async function uploadVerified(api: Api, ws: string, name: string, text: string, tags: string[] = []): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([text]), name);
  if (tags.length) fd.append('tags', JSON.stringify(tags));
  const r = await api.post(`/v1/workspaces/${ws}/documents`, fd);
  if (r.status !== 201) throw new Error(`upload ${r.status} ${r.text}`);
  for (let i = 0; i < 300; i++) {
    const d = await api.get(`/v1/workspaces/${ws}/documents/${r.body.id}`);
    if (d.body.processingStatus === 'VERIFIED') return r.body.id;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('document never VERIFIED');
}
