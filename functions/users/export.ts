import { exportMyData } from '#shared/accounts/operations.ts';
import { accountExport } from '#shared/services/account-export.ts';
import { cursors } from '#shared/services/cursors.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(exportMyData, { accountExport, cursors });
