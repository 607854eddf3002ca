import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '#infra/bundle.ts';

/**
 * The synthesized CloudFormation template, read from cdk.out, with every intrinsic (Ref, GetAtt,
 * Join, Sub, Select, Split, GetAZs) resolved to the local names the tier gives resources: tables keep a
 * stack-prefixed name, ARNs use REGION/ACCOUNT below. An intrinsic this file does not know throws,
 * so a new construct cannot slip past the tier with an unresolved value.
 */

export const REGION = 'eu-west-1';
export const ACCOUNT = '123456789012';
export const STACK = 'AgentConversationService';
export const CDK_OUT = resolve(REPO_ROOT, 'cdk.out');

export interface Resource {
  Type: string;
  Properties?: any;
  Metadata?: Record<string, any>;
}
export type Template = { Resources: Record<string, Resource>; [k: string]: any };

/**
 * The template `npm run synth` wrote, its nested stacks' resources merged in (`flattenNested`), as a
 * deep copy, so a test may mutate it.
 */
export function loadTemplate(stackName = STACK): Template {
  const read = (file: string): Template => JSON.parse(readFileSync(join(CDK_OUT, file), 'utf8'));
  return flattenNested(read(`${stackName}.template.json`), read);
}

const hex = (s: string, n: number) => createHash('sha256').update(s).digest('hex').slice(0, n);
const uuid = (s: string) => {
  const h = hex(s, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};
const arn = (service: string, rest: string, region = REGION) => `arn:aws:${service}:${region}:${ACCOUNT}:${rest}`;

/** Ref and GetAtt values of one resource, by its type (the names a deployment would have, shaped alike). */
export function names(stack: string, id: string, r: Resource): { ref: string; atts: Record<string, string> } {
  const p = r.Properties ?? {};
  switch (r.Type) {
    case 'AWS::DynamoDB::GlobalTable':
    case 'AWS::DynamoDB::Table': {
      const name = `${stack}-${id}`;
      return {
        ref: name,
        atts: { Arn: arn('dynamodb', `table/${name}`), StreamArn: arn('dynamodb', `table/${name}/stream/1`) },
      };
    }
    case 'AWS::KMS::Key': {
      const keyId = uuid(id);
      return { ref: keyId, atts: { Arn: arn('kms', `key/${keyId}`), KeyId: keyId } };
    }
    case 'AWS::ECS::Cluster': {
      const name = `${stack}-${id}`;
      return { ref: name, atts: { Arn: arn('ecs', `cluster/${name}`) } };
    }
    case 'AWS::ECS::TaskDefinition':
      return { ref: arn('ecs', `task-definition/${p.Family ?? id}:1`), atts: {} };
    case 'AWS::IAM::Role':
      return {
        ref: id,
        atts: { Arn: `arn:aws:iam::${ACCOUNT}:role/${id}`, RoleId: `AROA${hex(id, 16).toUpperCase()}` },
      };
    case 'AWS::Lambda::Function': {
      // A function named in the template keeps its name (the resend function's, known before it exists).
      const name = typeof p.FunctionName === 'string' ? p.FunctionName : id;
      return { ref: name, atts: { Arn: arn('lambda', `function:${name}`) } };
    }
    case 'AWS::S3::Bucket': {
      // Bucket ARNs name neither region nor account.
      const name = `${stack}-${id}`.toLowerCase().slice(0, 63);
      return {
        ref: name,
        atts: {
          Arn: `arn:aws:s3:::${name}`,
          DomainName: `${name}.s3.amazonaws.com`,
          RegionalDomainName: `${name}.s3.${REGION}.amazonaws.com`,
        },
      };
    }
    case 'AWS::EC2::Subnet':
      return { ref: `subnet-${hex(id, 17)}`, atts: {} };
    case 'AWS::EC2::SecurityGroup':
      return { ref: `sg-${hex(id, 17)}`, atts: { GroupId: `sg-${hex(id, 17)}` } };
    case 'AWS::EC2::VPC':
      return { ref: `vpc-${hex(id, 17)}`, atts: {} };
    case 'AWS::SQS::Queue':
      return {
        ref: `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${id}`,
        atts: { Arn: arn('sqs', id), QueueName: id },
      };
    case 'AWS::SNS::Topic':
      return { ref: arn('sns', id), atts: { TopicArn: arn('sns', id) } };
    case 'AWS::Events::EventBus': {
      const name = p.Name ?? `${stack}-${id}`;
      return { ref: name, atts: { Arn: arn('events', `event-bus/${name}`), Name: name } };
    }
    case 'AWS::Events::Rule':
      return { ref: id, atts: { Arn: arn('events', `rule/${id}`) } };
    case 'AWS::Logs::LogGroup':
      return { ref: id, atts: { Arn: arn('logs', `log-group:${id}:*`) } };
    case 'AWS::ApiGatewayV2::Api':
      return {
        ref: hex(id, 10),
        atts: {
          ApiEndpoint: `${p.ProtocolType === 'WEBSOCKET' ? 'wss' : 'https'}://${hex(id, 10)}.execute-api.${REGION}.amazonaws.com`,
        },
      };
    case 'AWS::CloudFront::Distribution':
      return {
        ref: `E${hex(id, 13).toUpperCase()}`,
        atts: { DomainName: `d${hex(id, 13)}.cloudfront.net`, Id: `E${hex(id, 13).toUpperCase()}` },
      };
    case 'AWS::Lambda::Url':
      // A function URL's host is `<url id>.lambda-url.<region>.on.aws` (its TargetFunctionArn is the function's).
      return {
        ref: id,
        atts: {
          FunctionUrl: `https://${hex(id, 32)}.lambda-url.${REGION}.on.aws/`,
          FunctionArn: arn('lambda', `function:${p.TargetFunctionArn?.['Fn::GetAtt']?.[0] ?? id}`),
        },
      };
    case 'AWS::CloudFront::OriginAccessControl':
      return { ref: `E${hex(id, 13).toUpperCase()}`, atts: { Id: `E${hex(id, 13).toUpperCase()}` } };
    case 'AWS::StepFunctions::StateMachine': {
      const machine = arn('states', `stateMachine:${p.StateMachineName ?? id}`);
      return { ref: machine, atts: { Arn: machine, Name: p.StateMachineName ?? id } };
    }
    case 'Custom::SandboxImageSize':
      // ECR's size of the pushed image, known only in a deployment (infra/constructs/image-size.ts): none here.
      return { ref: id, atts: { 'imageDetails.0.imageSizeInBytes': '0' } };
    case 'AWS::CloudFront::Function':
      return {
        ref: arn('cloudfront', `function/${id}`, ''),
        atts: { FunctionARN: `arn:aws:cloudfront::${ACCOUNT}:function/${id}`, Stage: 'LIVE' },
      };
    default:
      return { ref: id, atts: { Arn: arn(r.Type.split('::')[1]!.toLowerCase(), id) } };
  }
}

/** A template whose values are plain strings: what CloudFormation would have passed to each resource. */
export function resolveTemplate(template: Template, stack = STACK): Template {
  const table = new Map(Object.entries(template.Resources).map(([id, r]) => [id, names(stack, id, r)]));
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': REGION,
    'AWS::AccountId': ACCOUNT,
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': stack,
    'AWS::StackId': arn('cloudformation', `stack/${stack}/1`),
    'AWS::NoValue': '',
  };
  const ref = (name: string): string => {
    if (name in pseudo) return pseudo[name]!;
    const found = table.get(name);
    if (!found) throw new Error(`Ref to unknown resource ${name}`);
    return found.ref;
  };
  const getAtt = (id: string, att: string): string => {
    const found = table.get(id);
    const value = found?.atts[att];
    if (value === undefined)
      throw new Error(`GetAtt ${id}.${att}: the tier does not name this attribute (add it in test/tier/template.ts)`);
    return value;
  };
  const walk = (v: any): any => {
    if (Array.isArray(v)) return v.map(walk);
    if (!v || typeof v !== 'object') return v;
    const keys = Object.keys(v);
    if (keys.length === 1 && (keys[0] === 'Ref' || keys[0]!.startsWith('Fn::'))) {
      const [fn] = keys;
      const arg = v[fn!];
      switch (fn) {
        case 'Ref':
          return ref(arg);
        case 'Fn::GetAtt': {
          const [id, att] = Array.isArray(arg) ? arg : String(arg).split('.');
          return getAtt(id, att);
        }
        case 'Fn::Join':
          return walk(arg[1]).join(arg[0]);
        case 'Fn::Select':
          return walk(arg[1])[Number(walk(arg[0]))];
        case 'Fn::GetAZs':
          return ['a', 'b', 'c'].map((z) => `${REGION}${z}`);
        case 'Fn::Split':
          return walk(arg[1]).split(arg[0]);
        case 'Fn::Sub': {
          const [text, vars] = Array.isArray(arg) ? [arg[0], walk(arg[1] ?? {})] : [arg, {}];
          return String(text).replace(/\$\{([^}]+)\}/g, (_, name: string) =>
            name in vars
              ? vars[name]
              : name.includes('.')
                ? getAtt(...(name.split('.') as [string, string]))
                : ref(name),
          );
        }
        default:
          throw new Error(`The tier cannot resolve ${fn}`);
      }
    }
    return Object.fromEntries(keys.map((k) => [k, walk(v[k])]));
  };
  return {
    ...template,
    Resources: Object.fromEntries(
      Object.entries(template.Resources).map(([id, r]) => [id, { ...r, Properties: walk(r.Properties) }]),
    ),
    Outputs: walk(template.Outputs ?? {}),
  };
}

/** Resources of one type, as [logical id, resource]. */
export const ofType = (t: Template, type: string) => Object.entries(t.Resources).filter(([, r]) => r.Type === type);

/** A Lambda function of the template with what the tier needs to run it. */
export interface FunctionDef {
  logicalId: string;
  /** Lambda's name of it: the template's `FunctionName`, else (a generated name) its logical id. */
  functionName: string;
  /** The construct id: `Fn-<route id>` → `<route id>`, e.g. `getSettings`, `sweeper`. */
  name: string;
  arn: string;
  roleArn: string;
  environment: Record<string, string>;
  handler: string;
  timeoutSeconds: number;
  memoryMb: number;
  runtime: string;
  bundleDir: string;
}

export function functionsOf(raw: Template, resolved: Template): FunctionDef[] {
  return ofType(resolved, 'AWS::Lambda::Function').map(([id, r]) => {
    const p = r.Properties;
    const path: string = raw.Resources[id]!.Metadata?.['aws:cdk:path'] ?? id;
    const asset = raw.Resources[id]!.Metadata?.['aws:asset:path'];
    if (!asset) throw new Error(`Function ${id} has no bundled asset in cdk.out`);
    const functionName: string = p.FunctionName ?? id;
    return {
      logicalId: id,
      functionName,
      name: /\/Fn-([^/]+)\//.exec(path)?.[1] ?? id,
      arn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`,
      roleArn: p.Role,
      environment: p.Environment?.Variables ?? {},
      handler: p.Handler,
      timeoutSeconds: p.Timeout ?? 3,
      memoryMb: p.MemorySize ?? 128,
      runtime: p.Runtime,
      bundleDir: join(CDK_OUT, asset),
    };
  });
}

/**
 * Drops every statement granting `action` (and the action from statements granting several), in
 * every role policy or only in the role policy of function `fn` (its construct id, `Fn-<fn>`).
 * For the mutation cases. Returns how many statements granted it.
 */
export function withoutAction(t: Template, action: string, fn?: string): number {
  let removed = 0;
  for (const [, p] of ofType(t, 'AWS::IAM::Policy')) {
    if (fn && !String(p.Metadata?.['aws:cdk:path']).includes(`/Fn-${fn}/`)) continue;
    p.Properties.PolicyDocument.Statement = p.Properties.PolicyDocument.Statement.flatMap((s: any) => {
      const actions = [s.Action].flat();
      if (!actions.includes(action)) return [s];
      removed++;
      const rest = actions.filter((a: string) => a !== action);
      return rest.length ? [{ ...s, Action: rest }] : [];
    });
  }
  return removed;
}

/**
 * One template with every nested stack's resources in it, as if the deployment were one stack: a nested
 * template's parameters become the expressions its parent passes, a parent's `GetAtt <nested>.Outputs.X`
 * becomes the nested output's value, and the `AWS::CloudFormation::Stack` resources go. Logical ids are
 * kept (a collision throws; each template's `AWS::CDK::Metadata` but the parent's is left out). `read` gives a nested template by its file name in the cloud assembly.
 */
export function flattenNested(parent: Template, read: (file: string) => Template): Template {
  const out: Template = { ...parent, Resources: { ...parent.Resources } };
  const outputsOf = new Map<string, Record<string, any>>();
  for (const [id, r] of Object.entries(parent.Resources)) {
    if (r.Type !== 'AWS::CloudFormation::Stack') continue;
    const file = r.Metadata?.['aws:asset:path'];
    if (!file) throw new Error(`Nested stack ${id} names no template file`);
    const nested = flattenNested(read(file), read);
    const params: Record<string, unknown> = r.Properties?.Parameters ?? {};
    const bind = (v: any): any => {
      if (Array.isArray(v)) return v.map(bind);
      if (!v || typeof v !== 'object') return v;
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === 'Ref' && typeof v.Ref === 'string' && v.Ref in params) return params[v.Ref];
      if (keys.length === 1 && keys[0] === 'Fn::Sub') {
        const text = Array.isArray(v['Fn::Sub']) ? v['Fn::Sub'][0] : v['Fn::Sub'];
        for (const name of Object.keys(params))
          if (String(text).includes(`\${${name}}`))
            throw new Error(`Fn::Sub on nested parameter ${name}: not flattened`);
      }
      return Object.fromEntries(keys.map((k) => [k, bind(v[k])]));
    };
    delete out.Resources[id];
    for (const [nid, nr] of Object.entries(nested.Resources)) {
      if (nr.Type === 'AWS::CDK::Metadata') continue; // CDK's version report, one per template
      if (nid in out.Resources || nid in parent.Resources) throw new Error(`Logical id ${nid} is in two stacks`);
      out.Resources[nid] = bind(nr);
    }
    outputsOf.set(
      id,
      Object.fromEntries(Object.entries(nested.Outputs ?? {}).map(([k, o]: [string, any]) => [k, bind(o.Value)])),
    );
  }
  const link = (v: any): any => {
    if (Array.isArray(v)) return v.map(link);
    if (!v || typeof v !== 'object') return v;
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === 'Fn::GetAtt') {
      const [id, att] = Array.isArray(v['Fn::GetAtt']) ? v['Fn::GetAtt'] : String(v['Fn::GetAtt']).split(/\.(.*)/);
      if (outputsOf.has(id) && String(att).startsWith('Outputs.')) {
        const value = outputsOf.get(id)![String(att).slice('Outputs.'.length)];
        if (value === undefined) throw new Error(`No output ${att} in nested stack ${id}`);
        return link(value);
      }
    }
    if (keys.length === 1 && keys[0] === 'DependsOn') return v;
    return Object.fromEntries(keys.map((k) => [k, link(v[k])]));
  };
  out.Resources = Object.fromEntries(
    Object.entries(out.Resources).map(([id, r]) => {
      const linked = link(r);
      if (linked.DependsOn) {
        const deps = [linked.DependsOn].flat().filter((d: string) => d in out.Resources);
        if (deps.length) linked.DependsOn = deps;
        else delete linked.DependsOn;
      }
      return [id, linked];
    }),
  );
  if (out.Outputs) out.Outputs = link(out.Outputs);
  return out;
}
