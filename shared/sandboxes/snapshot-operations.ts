import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { sandboxParams, snapshotCompleteBodySchema, snapshotCompleteResponseSchema, snapshotDownloadSchema, snapshotUploadSchema } from '#shared/protocol.ts';

/** The bridge's workspace-snapshot routes: the sandbox program, with its own key, for its own objects. */
export const sandboxSnapshotUpload = defineOperation('sandboxSnapshotUpload', () => ({ params: sandboxParams, response: snapshotUploadSchema }), ({ params, headers }, { sandboxBridge }) =>
  sandboxBridge.snapshotUpload(params.sandbox_id, keyFromHeaders(headers)),
);

export const sandboxSnapshotComplete = defineOperation('sandboxSnapshotComplete', () => ({ params: sandboxParams, body: snapshotCompleteBodySchema, response: snapshotCompleteResponseSchema }), ({ params, headers, body }, { sandboxBridge }) =>
  sandboxBridge.snapshotComplete(params.sandbox_id, keyFromHeaders(headers), body.key),
);

export const sandboxSnapshotDownload = defineOperation('sandboxSnapshotDownload', () => ({ params: sandboxParams, response: snapshotDownloadSchema }), ({ params, headers }, { sandboxBridge }) =>
  sandboxBridge.snapshotDownload(params.sandbox_id, keyFromHeaders(headers)),
);
