import { FargateSandboxRuntime } from '#shared/sandboxes/runtime/fargate-sandbox-runtime.ts';
import { fargateConfig, fargateSpec, FakeAws } from '#test/helpers/fake-aws.ts';
import { sandboxRuntimeContract } from '#test/contract/sandbox-runtime.contract.ts';

sandboxRuntimeContract('fargate (ECS at the SDK boundary)', async () => {
  const aws = new FakeAws();
  // Tasks take a while to stop, as on ECS: destroy is done only once they have.
  aws.stopsLinger = true;
  const { ecs } = aws.clients();
  return {
    runtime: new FargateSandboxRuntime(fargateConfig, ecs),
    spec: fargateSpec(),
    badSpec: fargateSpec({
      id: 'bad',
      fargate: {
        taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/gone:1',
        family: 'gone',
        spot: false,
      },
    }),
    settle: async () => aws.finishStops(),
    runningFor: async (id) =>
      [...aws.tasks.values()].filter((t) => t.startedBy === id && t.desiredStatus === 'RUNNING').length,
    close: async () => aws.restore(),
  };
});
