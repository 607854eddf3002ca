import { readFileSync } from 'node:fs';
import { Duration, RemovalPolicy, SecretValue, Stack } from 'aws-cdk-lib';
import {
  AccountRecovery,
  CfnUserPoolGroup,
  Mfa,
  OAuthScope,
  ProviderAttribute,
  UserPool,
  type UserPoolClient,
  UserPoolClientIdentityProvider,
  type UserPoolDomain,
  UserPoolIdentityProviderGoogle,
  UserPoolIdentityProviderOidc,
  UserPoolIdentityProviderSaml,
  UserPoolIdentityProviderSamlMetadata,
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import type { Config } from '#infra/config.ts';

/**
 * The stack's own OpenID issuer when no external one is configured: a Cognito user pool (billed per
 * monthly active user, nothing at rest) with its hosted sign-in domain, a public app client (code +
 * PKCE, no secret: the console is a page), callback `<PublicUrl>/auth/callback`, self sign-up only
 * when `signupMode` is `open`, optional MFA (TOTP), the group `operators`, and federation to Google,
 * any OpenID issuer or any SAML IdP by configuration. Its hosted pages are proven on paper only (docs/sign-in.md).
 */
export class CognitoSignIn extends Construct {
  readonly pool: UserPool;
  readonly client: UserPoolClient;
  readonly domain: UserPoolDomain;
  /** What the functions verify tokens against: Cognito's issuer URL and the client id (access tokens carry it as `client_id`). */
  readonly issuer: string;

  constructor(scope: Construct, id: string, props: { config: Config; publicUrl: string }) {
    super(scope, id);
    const { config } = props;
    this.pool = new UserPool(this, 'Pool', {
      selfSignUpEnabled: config.signupMode === 'open',
      signInAliases: { email: true },
      autoVerify: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      passwordPolicy: { minLength: 12, requireUppercase: true, requireDigits: true, requireSymbols: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const providers = [UserPoolClientIdentityProvider.COGNITO];
    const idps: Construct[] = [];
    for (const p of config.cognitoIdentityProviders) {
      if (p.type === 'google') {
        idps.push(
          new UserPoolIdentityProviderGoogle(this, `Idp-${p.name}`, {
            userPool: this.pool,
            clientId: p.clientId,
            clientSecretValue: clientSecret(p),
            scopes: ['openid', 'email', 'profile'],
            attributeMapping: {
              email: ProviderAttribute.GOOGLE_EMAIL,
              emailVerified: ProviderAttribute.GOOGLE_EMAIL_VERIFIED,
            },
          }),
        );
        providers.push(UserPoolClientIdentityProvider.GOOGLE);
      } else if (p.type === 'oidc') {
        idps.push(
          new UserPoolIdentityProviderOidc(this, `Idp-${p.name}`, {
            userPool: this.pool,
            name: p.name,
            clientId: p.clientId,
            // The props take a string: the dynamic reference's token, resolved by CloudFormation at deploy.
            clientSecret: clientSecret(p).unsafeUnwrap(),
            issuerUrl: p.issuerUrl,
            scopes: ['openid', 'email'],
            attributeMapping: {
              email: ProviderAttribute.other('email'),
              emailVerified: ProviderAttribute.other('email_verified'),
            },
          }),
        );
        providers.push(UserPoolClientIdentityProvider.custom(p.name));
      } else {
        idps.push(
          new UserPoolIdentityProviderSaml(this, `Idp-${p.name}`, {
            userPool: this.pool,
            name: p.name,
            metadata: p.metadataUrl
              ? UserPoolIdentityProviderSamlMetadata.url(p.metadataUrl)
              : UserPoolIdentityProviderSamlMetadata.file(readFileSync(p.metadataFile!, 'utf8')),
            ...(p.identifiers ? { identifiers: p.identifiers } : {}),
            attributeMapping: {
              email: ProviderAttribute.other(p.emailAttribute),
              ...(p.emailVerifiedAttribute ? { emailVerified: ProviderAttribute.other(p.emailVerifiedAttribute) } : {}),
            },
          }),
        );
        providers.push(UserPoolClientIdentityProvider.custom(p.name));
      }
    }
    this.client = this.pool.addClient('Console', {
      generateSecret: false,
      authFlows: {},
      supportedIdentityProviders: providers,
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.PROFILE],
        callbackUrls: [`${props.publicUrl}/auth/callback`],
        logoutUrls: [`${props.publicUrl}/`],
      },
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.days(30),
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
    });
    // The client names the providers: CloudFormation must make them first.
    for (const idp of idps) this.client.node.addDependency(idp);
    const stack = Stack.of(this);
    this.domain = this.pool.addDomain('Hosted', {
      cognitoDomain: {
        domainPrefix:
          config.cognitoDomainPrefix ??
          `${config.stackName.toLowerCase()}-${stack.account.startsWith('${') ? 'acct' : stack.account.slice(-6)}`.slice(
            0,
            63,
          ),
      },
    });
    new CfnUserPoolGroup(this, 'Operators', {
      userPoolId: this.pool.userPoolId,
      groupName: 'operators',
      description: 'Operators of the service (suspend, reactivate, plans, any audit log)',
    });
    this.issuer = `https://cognito-idp.${stack.region}.amazonaws.com/${this.pool.userPoolId}`;
  }
}

/**
 * A federated client's secret as a CloudFormation dynamic reference to Secrets Manager, never its
 * value: `clientSecretName` names the secret; the older `clientSecret` is accepted only as such a
 * reference already (infra/config.ts refuses anything else).
 */
function clientSecret(p: { clientSecretName?: string; clientSecret?: string }): SecretValue {
  return p.clientSecretName
    ? SecretValue.secretsManager(p.clientSecretName)
    : SecretValue.unsafePlainText(p.clientSecret!);
}
