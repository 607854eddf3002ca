import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';

/** The bridge's workspace-snapshot routes: the sandbox program, with its own key, for its own objects. */
export const sandboxSnapshotUpload = defineOperation('sandboxSnapshotUpload', ({ params, headers }, { sandboxBridge }) =>
  sandboxBridge.snapshotUpload(params.sandbox_id, keyFromHeaders(headers)),
);

export const sandboxSnapshotComplete = defineOperation('sandboxSnapshotComplete', ({ params, headers, body }, { sandboxBridge }) =>
  sandboxBridge.snapshotComplete(params.sandbox_id, keyFromHeaders(headers), body.key),
);

export const sandboxSnapshotDownload = defineOperation('sandboxSnapshotDownload', ({ params, headers }, { sandboxBridge }) =>
  sandboxBridge.snapshotDownload(params.sandbox_id, keyFromHeaders(headers)),
);
