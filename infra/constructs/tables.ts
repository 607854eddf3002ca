import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, Billing, ProjectionType, TableV2, type Attribute } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { keyAttributeType, tableKeys, tables, type IndexDef, type TableKey } from '#shared/store/tables.ts';

const attribute = (name: string): Attribute => ({
  name,
  type: keyAttributeType(name) === 'N' ? AttributeType.NUMBER : AttributeType.STRING,
});

/**
 * One DynamoDB table per entry of shared/store/tables.ts, with its indexes as declared: on demand
 * (nothing billed while idle), point-in-time recovery on, kept when the stack is deleted.
 */
export class DataTables extends Construct {
  readonly tables: Record<TableKey, TableV2>;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.tables = {} as Record<TableKey, TableV2>;
    for (const key of tableKeys) {
      const def = tables[key];
      const sk: string | undefined = 'sk' in def ? def.sk : undefined;
      const ttl: string | undefined = 'ttl' in def ? def.ttl : undefined;
      this.tables[key] = new TableV2(this, key, {
        partitionKey: attribute(def.pk),
        ...(sk ? { sortKey: attribute(sk) } : {}),
        billing: Billing.onDemand(),
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        removalPolicy: RemovalPolicy.RETAIN,
        ...(ttl ? { timeToLiveAttribute: ttl } : {}),
        globalSecondaryIndexes: Object.entries(def.indexes as Record<string, IndexDef>).map(([indexName, idx]) => ({
          indexName,
          partitionKey: attribute(idx.pk),
          ...(idx.sk ? { sortKey: attribute(idx.sk) } : {}),
          ...(idx.include?.length === 0
            ? { projectionType: ProjectionType.KEYS_ONLY }
            : idx.include
              ? { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...idx.include] }
              : {}),
        })),
      });
    }
  }
}
