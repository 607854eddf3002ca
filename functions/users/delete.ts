import { deleteMyAccount } from '#shared/accounts/operations.ts';
import { accountDeletion } from '#shared/services/account-deletion.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(deleteMyAccount, { accountDeletion });
