import { FargateSandboxRuntime } from '#shared/sandboxes/fargate-sandbox-runtime.ts';
import { fargateConfig, fargateSpec, FakeAws } from '#test/helpers/fake-aws.ts';
import { sandboxRuntimeContract } from '#test/contract/sandbox-runtime.contract.ts';

sandboxRuntimeContract('fargate (ECS and EFS at the SDK boundary)', async () => {
  const aws = new FakeAws();
  const { ecs, efs } = aws.clients();
  return {
    runtime: new FargateSandboxRuntime(fargateConfig, ecs, efs),
    spec: fargateSpec(),
    badSpec: fargateSpec({ id: 'bad', fargate: { taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/gone:1', family: 'gone', spot: false } }),
    settle: async () => aws.finishWipes(),
    runningFor: async (id) =>
      [...aws.tasks.values()].filter(
        (t) => t.startedBy === id && t.desiredStatus === 'RUNNING' && t.overrides?.containerOverrides?.[0]?.environment?.some((e) => e.name === 'SANDBOX_MODE' && e.value === 'run'),
      ).length,
    close: async () => aws.restore(),
  };
});
