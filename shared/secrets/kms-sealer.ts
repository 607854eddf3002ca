import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import type { Sealer } from '#shared/secrets/sealer.ts';

const PREFIX = 'kms1';

/**
 * AWS KMS Encrypt/Decrypt with the owner in the encryption context. KMS takes at most 4 KB of
 * plaintext: settings seal each secret on its own and refuse a longer one (a 422).
 */
export class KmsSealer implements Sealer {
  constructor(
    private readonly keyId: string,
    private readonly kms: KMSClient = new KMSClient({}),
  ) {}

  async seal(plaintext: string, context: string): Promise<string> {
    const out = await this.kms.send(
      new EncryptCommand({
        KeyId: this.keyId,
        Plaintext: Buffer.from(plaintext, 'utf8'),
        EncryptionContext: { owner: context },
      }),
    );
    if (!out.CiphertextBlob) throw new Error('KMS returned no ciphertext');
    return `${PREFIX}.${Buffer.from(out.CiphertextBlob).toString('base64')}`;
  }

  async open(sealed: string, context: string): Promise<string> {
    if (!sealed.startsWith(`${PREFIX}.`)) throw new Error('Not a KMS-sealed value');
    const out = await this.kms.send(
      new DecryptCommand({
        KeyId: this.keyId,
        CiphertextBlob: Buffer.from(sealed.slice(PREFIX.length + 1), 'base64'),
        EncryptionContext: { owner: context },
      }),
    );
    if (!out.Plaintext) throw new Error('KMS returned no plaintext');
    return Buffer.from(out.Plaintext).toString('utf8');
  }
}
