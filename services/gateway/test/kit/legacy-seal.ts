import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** A value as versions before v2 sealed it: one HKDF key with a constant salt, no associated data. */
export function sealV1(secret: string, plaintext: string): string {
  const key = Buffer.from(hkdfSync('sha256', secret, 'keygate', 'provider-key-encryption', 32));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), data]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join('.');
}
