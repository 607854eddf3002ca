import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
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
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import type { Config } from '#infra/config.ts';

/**
 * The stack's own OpenID issuer when no external one is configured: a Cognito user pool (billed per
 * monthly active user, nothing at rest) with its hosted sign-in domain, a public app client (code +
 * PKCE, no secret: the console is a page), callback `<PublicUrl>/auth/callback`, self sign-up only
 * when `signupMode` is `open`, optional MFA (TOTP), the group `operators`, and federation to Google
 * or any OpenID issuer by configuration. Its hosted pages are proven on paper only (docs/sign-in.md).
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
    for (const p of config.cognitoIdentityProviders) {
      if (p.type === 'google') {
        new UserPoolIdentityProviderGoogle(this, `Idp-${p.name}`, {
          userPool: this.pool,
          clientId: p.clientId,
          clientSecret: p.clientSecret,
          scopes: ['openid', 'email', 'profile'],
          attributeMapping: {
            email: ProviderAttribute.GOOGLE_EMAIL,
            emailVerified: ProviderAttribute.GOOGLE_EMAIL_VERIFIED,
          },
        });
        providers.push(UserPoolClientIdentityProvider.GOOGLE);
      } else {
        new UserPoolIdentityProviderOidc(this, `Idp-${p.name}`, {
          userPool: this.pool,
          name: p.name,
          clientId: p.clientId,
          clientSecret: p.clientSecret,
          issuerUrl: p.issuerUrl!,
          scopes: ['openid', 'email'],
          attributeMapping: {
            email: ProviderAttribute.other('email'),
            emailVerified: ProviderAttribute.other('email_verified'),
          },
        });
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
