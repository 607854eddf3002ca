import { randomBytes } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { KmsSealer } from '#shared/secrets/kms-sealer.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';

describe('LocalSealer', () => {
  const sealer = LocalSealer.withKey(randomBytes(32));

  it('round-trips and never stores the plaintext', async () => {
    const sealed = await sealer.seal('sk-plain-value', 'alice');
    expect(sealed).not.toContain('sk-plain-value');
    expect(sealed.startsWith('local1.')).toBe(true);
    expect(await sealer.open(sealed, 'alice')).toBe('sk-plain-value');
    expect(await sealer.seal('sk-plain-value', 'alice')).not.toBe(sealed); // fresh IV each time
  });

  it("refuses another user's context and any tampering", async () => {
    const sealed = await sealer.seal('value', 'alice');
    await expect(sealer.open(sealed, 'bob')).rejects.toThrow();
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] = ct[0]! ^ 1;
    await expect(
      sealer.open([parts[0], parts[1], parts[2], ct.toString('base64url')].join('.'), 'alice'),
    ).rejects.toThrow();
    await expect(LocalSealer.withKey(randomBytes(32)).open(sealed, 'alice')).rejects.toThrow();
  });

  it('generates its key file once, readable by the owner only, and reuses it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sealer-'));
    const file = join(dir, 'nested', 'secret.key');
    const a = LocalSealer.fromKeyFile(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const sealed = await a.seal('v', 'u');
    expect(await LocalSealer.fromKeyFile(file).open(sealed, 'u')).toBe('v');
  });
});

describe('KmsSealer at the SDK boundary', () => {
  it('encrypts and decrypts with the key id and the owner as encryption context', async () => {
    const kms = mockClient(KMSClient);
    kms.on(EncryptCommand).resolves({ CiphertextBlob: Buffer.from('cipher-bytes') });
    kms.on(DecryptCommand).resolves({ Plaintext: Buffer.from('the secret') });
    const sealer = new KmsSealer('arn:aws:kms:eu-west-1:111122223333:key/abc', new KMSClient({}));
    const sealed = await sealer.seal('the secret', 'alice');
    expect(sealed).toBe(`kms1.${Buffer.from('cipher-bytes').toString('base64')}`);
    const enc = kms.commandCalls(EncryptCommand)[0]!.args[0].input;
    expect(enc.KeyId).toBe('arn:aws:kms:eu-west-1:111122223333:key/abc');
    expect(enc.EncryptionContext).toEqual({ owner: 'alice' });
    expect(Buffer.from(enc.Plaintext!).toString()).toBe('the secret');
    expect(await sealer.open(sealed, 'alice')).toBe('the secret');
    const dec = kms.commandCalls(DecryptCommand)[0]!.args[0].input;
    expect(dec.EncryptionContext).toEqual({ owner: 'alice' });
    expect(Buffer.from(dec.CiphertextBlob!).toString()).toBe('cipher-bytes');
    kms.restore();
  });

  it('propagates KMS failures and refuses values it did not seal', async () => {
    const kms = mockClient(KMSClient);
    kms.on(DecryptCommand).rejects(Object.assign(new Error('bad context'), { name: 'InvalidCiphertextException' }));
    const sealer = new KmsSealer('key', new KMSClient({}));
    await expect(sealer.open('kms1.AAAA', 'bob')).rejects.toThrow('bad context');
    await expect(sealer.open('local1.a.b.c', 'bob')).rejects.toThrow('Not a KMS-sealed value');
    kms.restore();
  });
});
