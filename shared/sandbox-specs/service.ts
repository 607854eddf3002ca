import { badRequest } from '#shared/http/errors.ts';
import { toSpecInfo, type SandboxSpecInfo } from '#shared/sandbox-specs/model.ts';
import type { SpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';

/** The spec routes' logic: a page of the list (page_id is an offset: specs are global, not per user) and a batch get. */
export class SandboxSpecService {
  constructor(private readonly registry: SpecRegistry) {}

  search(pageId: string | undefined, limit: number): { items: SandboxSpecInfo[]; next_page_id: string | null } {
    const start = pageId === undefined ? 0 : Number(pageId);
    if (!/^\d{1,6}$/.test(pageId ?? '0') || !Number.isSafeInteger(start)) throw badRequest('Invalid page_id');
    const all = this.registry.list();
    const end = start + limit;
    return { items: all.slice(start, end).map(toSpecInfo), next_page_id: end < all.length ? String(end) : null };
  }

  batchGet(ids: string[]): (SandboxSpecInfo | null)[] {
    return ids.map((id) => {
      const spec = this.registry.get(id);
      return spec ? toSpecInfo(spec) : null;
    });
  }
}
