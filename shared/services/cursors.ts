import { CursorCodec } from '#shared/http/cursor.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const cursors: ServiceFactory<CursorCodec> = (c) => new CursorCodec(() => c.adapters.cursorKey());
