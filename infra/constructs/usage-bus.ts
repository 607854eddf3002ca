import { EventBus, type IEventBus } from 'aws-cdk-lib/aws-events';
import { Construct } from 'constructs';

/**
 * The operator's bus for usage notices (docs/billing.md, "Notifications"): when an organization crosses
 * 80% or 100% of a plan limit, the function whose write crossed it puts one event here (source
 * `acs.usage`, detail-type `acs.usage.threshold`), once per (organization, limit, threshold, month).
 * A bus of its own, so `events:PutEvents` is granted on it alone (capability `usage:notify`) and the
 * operator attaches rules (email, chat, a billing system) without touching the account's default bus.
 */
export class UsageBus extends Construct {
  readonly bus: IEventBus;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.bus = new EventBus(this, 'Bus', { description: 'Usage notices: 80% / 100% of a plan limit (acs.usage)' });
  }
}
