import { Duration } from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachePolicy,
  type Distribution,
  OriginRequestPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { FunctionUrlOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { FunctionUrlAuthType, type IFunction, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { envPlatformModels } from '#shared/llm/platform-models.ts';

/** The upstream key ARNs of the context `platformLlms` (the gateway's only key grant); none without models. */
export function platformLlmKeyArns(platformLlms: unknown): string[] | undefined {
  if (platformLlms === undefined) return undefined;
  const arns = envPlatformModels(JSON.stringify(platformLlms)).list.flatMap((m) => m.api_key_arn ?? []);
  return [...new Set(arns)].sort();
}

/**
 * The LLM gateway on AWS, design (a) of docs/platform-llms.md: its function behind a function URL in
 * response-streaming mode (IAM auth: only CloudFront, signing with origin access control, may invoke
 * it; CDK grants `lambda:InvokeFunctionUrl` and `lambda:InvokeFunction` to the distribution with its
 * SourceArn), served on the public host under `/llm/*`. CloudFront's origin read timeout is raised to
 * 60 s (it applies to the first byte and to each gap: the gateway sends an SSE comment every 15 s).
 */
export class LlmGatewayFront extends Construct {
  readonly url: string;

  constructor(scope: Construct, id: string, props: { fn: IFunction; distribution: Distribution }) {
    super(scope, id);
    const functionUrl = props.fn.addFunctionUrl({
      authType: FunctionUrlAuthType.AWS_IAM,
      invokeMode: InvokeMode.RESPONSE_STREAM,
    });
    this.url = functionUrl.url;
    props.distribution.addBehavior(
      '/llm/*',
      FunctionUrlOrigin.withOriginAccessControl(functionUrl, { readTimeout: Duration.seconds(60) }),
      {
        allowedMethods: AllowedMethods.ALLOW_ALL,
        cachePolicy: CachePolicy.CACHING_DISABLED,
        // Every viewer header but Host (the function URL's own host is the origin's); OAC replaces Authorization.
        originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
      },
    );
  }
}
