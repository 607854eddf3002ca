import { CursorCodec } from '#shared/http/cursor.ts';
import { defineService } from '#shared/services.ts';

export const cursors = defineService({ adapters: ['cursorKey'] }, (c) => new CursorCodec(() => c.adapters.cursorKey()));
