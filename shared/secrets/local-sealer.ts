import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Sealer } from '#shared/secrets/sealer.ts';

const PREFIX = 'local1';

/** AES-256-GCM with a key generated once into a file only the owner may read. */
export class LocalSealer implements Sealer {
  private constructor(private readonly key: Buffer) {}

  static fromKeyFile(path: string): LocalSealer {
    let key: Buffer;
    try {
      key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      key = randomBytes(32);
      mkdirSync(dirname(path), { recursive: true });
      // 'wx' so two processes starting together cannot each write a different key.
      try {
        writeFileSync(path, key.toString('base64'), { mode: 0o600, flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
      }
    }
    if (key.length !== 32) throw new Error(`Configuration error: ${path} does not hold a 32-byte key`);
    return new LocalSealer(key);
  }

  static withKey(key: Buffer): LocalSealer {
    return new LocalSealer(key);
  }

  async seal(plaintext: string, context: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [PREFIX, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
      '.',
    );
  }

  async open(sealed: string, context: string): Promise<string> {
    const [prefix, iv, tag, ct] = sealed.split('.');
    if (prefix !== PREFIX || !iv || !tag || ct === undefined) throw new Error('Not a locally sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
