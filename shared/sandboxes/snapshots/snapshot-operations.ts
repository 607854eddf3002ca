import { defineOperation } from '#shared/http/operation.ts';
import {
  sandboxParams,
  snapshotCompleteBodySchema,
  snapshotCompleteResponseSchema,
  snapshotDownloadSchema,
  snapshotUploadSchema,
} from '#shared/protocol.ts';

/** The bridge's workspace-snapshot routes: the sandbox program, with its own key, for its own objects. */
export const sandboxSnapshotUpload = defineOperation(
  'sandboxSnapshotUpload',
  () => ({ params: sandboxParams, response: snapshotUploadSchema, errors: [409, 429] }),
  ({ sandbox }, { sandboxBridge }) => sandboxBridge.snapshotUpload(sandbox),
);

export const sandboxSnapshotComplete = defineOperation(
  'sandboxSnapshotComplete',
  () => ({
    params: sandboxParams,
    body: snapshotCompleteBodySchema,
    response: snapshotCompleteResponseSchema,
    errors: [409],
  }),
  ({ body, sandbox }, { sandboxBridge }) => sandboxBridge.snapshotComplete(sandbox, body.key),
);

export const sandboxSnapshotDownload = defineOperation(
  'sandboxSnapshotDownload',
  () => ({ params: sandboxParams, response: snapshotDownloadSchema, errors: [409] }),
  ({ sandbox }, { sandboxBridge }) => sandboxBridge.snapshotDownload(sandbox),
);
