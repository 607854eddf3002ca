/**
 * The zero-fixed-cost gate: resources of a CloudFormation template that bill by the hour (or the
 * month) while nobody uses the service. Returns one readable line per offender.
 */
type Resource = { Type: string; Properties?: Record<string, any> };

/** Always billed while they exist, whatever their settings. */
const ALWAYS_HOURLY: Record<string, string> = {
  'AWS::EC2::NatGateway': 'NAT gateway',
  'AWS::EC2::Instance': 'EC2 instance',
  'AWS::EC2::EIP': 'Elastic IP (billed while it exists)',
  'AWS::EC2::TransitGateway': 'transit gateway',
  'AWS::EC2::ClientVpnEndpoint': 'client VPN endpoint',
  'AWS::ElasticLoadBalancing::LoadBalancer': 'classic load balancer',
  'AWS::ElasticLoadBalancingV2::LoadBalancer': 'load balancer',
  'AWS::AutoScaling::AutoScalingGroup': 'EC2 auto-scaling group',
  'AWS::RDS::DBInstance': 'RDS instance',
  'AWS::RDS::DBCluster': 'RDS/Aurora cluster',
  'AWS::ElastiCache::CacheCluster': 'ElastiCache cluster',
  'AWS::ElastiCache::ReplicationGroup': 'ElastiCache replication group',
  'AWS::ElastiCache::ServerlessCache': 'ElastiCache serverless (minimum storage charge)',
  'AWS::OpenSearchService::Domain': 'OpenSearch domain',
  'AWS::Elasticsearch::Domain': 'Elasticsearch domain',
  'AWS::OpenSearchServerless::Collection': 'OpenSearch Serverless collection (minimum OCUs)',
  'AWS::Redshift::Cluster': 'Redshift cluster',
  'AWS::DocDB::DBCluster': 'DocumentDB cluster',
  'AWS::Neptune::DBCluster': 'Neptune cluster',
  'AWS::MSK::Cluster': 'MSK cluster',
  'AWS::Kinesis::Stream': 'Kinesis stream (shard hours)',
  'AWS::SageMaker::Endpoint': 'SageMaker endpoint',
  'AWS::GlobalAccelerator::Accelerator': 'Global Accelerator',
  'AWS::DirectoryService::MicrosoftAD': 'directory',
};

export function hourlyBilled(template: { Resources?: Record<string, Resource> }): string[] {
  const out: string[] = [];
  for (const [id, r] of Object.entries(template.Resources ?? {})) {
    const p = r.Properties ?? {};
    const what = ALWAYS_HOURLY[r.Type];
    if (what) out.push(`${id}: ${what}`);
    // CloudFormation's default endpoint type is Gateway (free); Interface endpoints bill hourly per AZ.
    if (r.Type === 'AWS::EC2::VPCEndpoint' && p.VpcEndpointType && p.VpcEndpointType !== 'Gateway')
      out.push(`${id}: ${p.VpcEndpointType} VPC endpoint`);
    // DesiredCount defaults to 1 when absent.
    if (r.Type === 'AWS::ECS::Service' && (p.DesiredCount === undefined || p.DesiredCount > 0))
      out.push(`${id}: ECS service with tasks running at rest`);
    if ((r.Type === 'AWS::Lambda::Alias' || r.Type === 'AWS::Lambda::Version') && p.ProvisionedConcurrencyConfig)
      out.push(`${id}: provisioned concurrency`);
    if (r.Type === 'AWS::DynamoDB::Table' && p.BillingMode !== 'PAY_PER_REQUEST')
      out.push(`${id}: provisioned DynamoDB table`);
    if (r.Type === 'AWS::DynamoDB::GlobalTable' && p.BillingMode !== 'PAY_PER_REQUEST')
      out.push(`${id}: provisioned DynamoDB table`);
  }
  return out;
}
