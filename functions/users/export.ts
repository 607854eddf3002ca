import { exportMyData } from '#shared/accounts/operations.ts';
import { accountExport } from '#shared/services/account-export.ts';
import { cursors } from '#shared/services/cursors.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { cursorKey, keyStore } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(
  exportMyData,
  { conversationStore, eventStore, settingsStore, keyStore, cursorKey, sealer },
  { accountExport, cursors },
);
