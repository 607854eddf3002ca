import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { loadConfig, SAML_EMAIL_ATTRIBUTE } from '#infra/config.ts';
import { CognitoSignIn } from '#infra/constructs/sign-in.ts';

/**
 * The Cognito pool's federation (infra/constructs/sign-in.ts) in a small App of the construct alone:
 * Google, OpenID and SAML providers from the `cognitoIdentityProviders` context, client secrets only
 * as Secrets Manager dynamic references, and the configuration's refusals naming the key.
 */
const from = (context: Record<string, unknown>) => loadConfig((key) => context[key]);
const synth = (providers: unknown[]) => {
  const stack = new Stack(new App(), 'SignInOnly', { env: { account: '123456789012', region: 'eu-west-1' } });
  new CognitoSignIn(stack, 'SignIn', {
    config: from({ cognitoIdentityProviders: providers }),
    publicUrl: 'https://app.example.com',
  });
  return Template.fromStack(stack);
};
type Json = Record<string, any>;
const resources = (t: Template, type: string) => Object.values(t.findResources(type)) as Json[];

const metadataXml = `<?xml version="1.0"?><EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com/saml"/>`;

describe('federation through the Cognito pool', () => {
  it('Google and OpenID providers take their client secrets from Secrets Manager by name: a dynamic reference, never a value', () => {
    const t = synth([
      { type: 'google', name: 'Google', clientId: 'g-client', clientSecretName: 'acs/google-client' },
      {
        type: 'oidc',
        name: 'Corp',
        clientId: 'corp-client',
        clientSecretName: 'acs/corp-client',
        issuerUrl: 'https://login.corp.example.com',
      },
      // The older key, as a dynamic reference already: still accepted.
      {
        type: 'oidc',
        name: 'Legacy',
        clientId: 'legacy-client',
        clientSecret: '{{resolve:secretsmanager:acs/legacy:SecretString:::}}',
        issuerUrl: 'https://legacy.example.com',
      },
    ]);
    const idps = resources(t, 'AWS::Cognito::UserPoolIdentityProvider');
    const secretOf = (name: string) =>
      idps.find((r) => r.Properties.ProviderName === name)!.Properties.ProviderDetails.client_secret;
    expect(secretOf('Google')).toBe('{{resolve:secretsmanager:acs/google-client:SecretString:::}}');
    expect(secretOf('Corp')).toBe('{{resolve:secretsmanager:acs/corp-client:SecretString:::}}');
    expect(secretOf('Legacy')).toBe('{{resolve:secretsmanager:acs/legacy:SecretString:::}}');
    // Every client secret in the template is a reference.
    const template = JSON.stringify(t.toJSON());
    const secrets = [...template.matchAll(/"client_secret":("[^"]*"|\{[^}]*\})/g)].map((m) => m[1]);
    expect(secrets).toHaveLength(3);
    for (const s of secrets) expect(s).toMatch(/^"\{\{resolve:secretsmanager:[^}]+\}\}"$/);
    // The client offers them, and is made after them.
    const [client] = Object.entries(t.findResources('AWS::Cognito::UserPoolClient'));
    expect(client![1].Properties.SupportedIdentityProviders).toEqual(['COGNITO', 'Google', 'Corp', 'Legacy']);
    const idpIds = Object.keys(t.findResources('AWS::Cognito::UserPoolIdentityProvider'));
    expect(client![1].DependsOn).toEqual(expect.arrayContaining(idpIds));
  });

  it('SAML providers from a metadata URL or a metadata file, with the email mapped (and its verification when the IdP sends one)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'acs-saml-')), 'metadata.xml');
    writeFileSync(file, metadataXml);
    const t = synth([
      {
        type: 'saml',
        name: 'Okta',
        metadataUrl: 'https://corp.okta.example.com/app/abc/sso/saml/metadata',
        identifiers: ['corp.example.com'],
      },
      {
        type: 'saml',
        name: 'Adfs',
        metadataFile: file,
        emailAttribute: 'mail',
        emailVerifiedAttribute: 'mailVerified',
      },
    ]);
    const idps = resources(t, 'AWS::Cognito::UserPoolIdentityProvider');
    const okta = idps.find((r) => r.Properties.ProviderName === 'Okta')!.Properties;
    expect(okta).toMatchObject({
      ProviderType: 'SAML',
      ProviderDetails: { MetadataURL: 'https://corp.okta.example.com/app/abc/sso/saml/metadata' },
      IdpIdentifiers: ['corp.example.com'],
      AttributeMapping: { email: SAML_EMAIL_ATTRIBUTE },
    });
    const adfs = idps.find((r) => r.Properties.ProviderName === 'Adfs')!.Properties;
    expect(adfs).toMatchObject({
      ProviderType: 'SAML',
      ProviderDetails: { MetadataFile: metadataXml },
      AttributeMapping: { email: 'mail', email_verified: 'mailVerified' },
    });
    const [client] = resources(t, 'AWS::Cognito::UserPoolClient');
    expect(client!.Properties.SupportedIdentityProviders).toEqual(['COGNITO', 'Okta', 'Adfs']);
  });

  it.each([
    [
      [{ type: 'google', name: 'G', clientId: 'c', clientSecret: 'plaintext-planted-secret' }],
      /"cognitoIdentityProviders" \(at 0\.clientSecret\): a plaintext client secret would be in the template/,
    ],
    [[{ type: 'google', name: 'G', clientId: 'c' }], /"cognitoIdentityProviders" \(at 0\.clientSecretName\)/],
    [
      [{ type: 'oidc', name: 'O', clientId: 'c', clientSecretName: 'x' }],
      /"cognitoIdentityProviders" \(at 0\.issuerUrl\)/,
    ],
    [
      [{ type: 'saml', name: 'S' }],
      /"cognitoIdentityProviders" \(at 0\.metadataUrl\): a SAML provider needs exactly one/,
    ],
    [
      [{ type: 'saml', name: 'S', metadataUrl: 'https://idp.example.com/m', metadataFile: '/tmp/m.xml' }],
      /exactly one of metadataUrl and metadataFile/,
    ],
    [
      [{ type: 'saml', name: 'S', metadataFile: '/nonexistent/metadata.xml' }],
      /"cognitoIdentityProviders" \(at 0\.metadataFile\): no such file/,
    ],
    [
      [{ type: 'saml', name: 'S', metadataUrl: 'http://idp.example.com/m' }],
      /"cognitoIdentityProviders" \(at 0\.metadataUrl\)/,
    ],
    [
      [{ type: 'saml', name: 'S', metadataUrl: 'https://idp.example.com/m', clientId: 'c' }],
      /"cognitoIdentityProviders"/,
    ],
    [
      [{ type: 'github', name: 'GH', clientId: 'c', clientSecretName: 'x' }],
      /"cognitoIdentityProviders" \(at 0\.type\)/,
    ],
  ])('refuses %j naming the key, never echoing a secret', (providers, message) => {
    let error = '';
    try {
      from({ cognitoIdentityProviders: providers });
    } catch (err) {
      error = (err as Error).message;
    }
    expect(error).toMatch(message);
    expect(error).not.toContain('plaintext-planted-secret');
  });
});
