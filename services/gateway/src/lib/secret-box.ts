import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, scryptSync } from 'node:crypto';

/** What a sealed value is: each purpose has its own key, so one can never be opened as another. */
export type SealPurpose =
  | 'provider-key'
  | 'webhook-secret'
  | 'provider-admin-key'
  | 'idp-client-secret'
  | 'idp-refresh-token'
  | 'idp-refresh-answer'
  | 'upstream-credential';

/** A sealed value's place: its purpose and the id of the row that holds it (bound as associated data). */
export interface SealContext {
  purpose: SealPurpose;
  row: string;
}

const PURPOSES: readonly SealPurpose[] = [
  'provider-key',
  'webhook-secret',
  'provider-admin-key',
  'idp-client-secret',
  'idp-refresh-token',
  'idp-refresh-answer',
  'upstream-credential',
];
const MIN_LENGTH = 32;
const MIN_BITS = 128;

/**
 * Why a KEYGATE_SECRET is too weak to encrypt with, or null. The estimate is the string's
 * Shannon entropy per character times its length, with at least 10 distinct characters: a random 32-byte value in hex or base64 is
 * well over 128 bits, a word, a repeated pattern or a short value is not.
 */
export function secretWeakness(secret: string): string | null {
  const counts = new Map<string, number>();
  for (const ch of secret) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  const n = [...secret].length;
  let perChar = 0;
  for (const c of counts.values()) perChar -= (c / n) * Math.log2(c / n);
  const bits = Math.floor(perChar * n);
  // A few symbols repeated (`abcdabcd…`) score well per character and are still guessable.
  if (n < MIN_LENGTH || bits < MIN_BITS || counts.size < 10)
    return `too weak (${n} characters, about ${bits} bits; at least ${MIN_LENGTH} random characters and ${MIN_BITS} bits are needed): use e.g. \`openssl rand -base64 32\``;
  return null;
}

/**
 * Authenticated encryption (AES-256-GCM) for secrets at rest. `v2.<iv>.<tag>.<ciphertext>`
 * (base64url) is sealed with a key per purpose, derived by HKDF from a scrypt-stretched
 * KEYGATE_SECRET, and bound to its row and purpose as associated data: a value copied to
 * another row or column does not open. `v1` values (one HKDF key, no associated data) still
 * open; `resealSecrets` rewrites them as `v2` at start.
 */
export class SecretBox {
  readonly #legacy: Buffer;
  readonly #keys: Map<SealPurpose, Buffer>;

  /** `previous`: the secret `v1` values were sealed with, when it was weak and has been replaced. */
  constructor(secret: string, opts: { previous?: string | null } = {}) {
    const weak = secretWeakness(secret);
    if (weak) throw new Error(`KEYGATE_SECRET is ${weak}`);
    const legacy = opts.previous ?? secret;
    this.#legacy = Buffer.from(hkdfSync('sha256', legacy, 'keygate', 'provider-key-encryption', 32));
    // Stretching makes each guess at a leaked database's secret cost ~32 MB and tens of ms.
    const master = scryptSync(secret, 'keygate/secret-box/v2', 32, {
      N: 2 ** 15,
      r: 8,
      p: 1,
      maxmem: 64 << 20,
    });
    this.#keys = new Map(
      PURPOSES.map((p) => [p, Buffer.from(hkdfSync('sha256', master, 'keygate/v2', `seal:${p}`, 32))]),
    );
  }

  seal(plaintext: string, at: SealContext): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key(at.purpose), iv);
    cipher.setAAD(aad(at));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v2', iv, cipher.getAuthTag(), data]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  open(sealed: string, at: SealContext): string {
    const [version, iv, tag, data] = sealed.split('.');
    if ((version !== 'v1' && version !== 'v2') || !iv || !tag || data === undefined)
      throw new Error('unrecognised sealed secret');
    const key = version === 'v1' ? this.#legacy : this.#key(at.purpose);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    if (version === 'v2') decipher.setAAD(aad(at));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }

  /** Sealed by an earlier version (one key for everything, bound to nothing). */
  static isLegacy(sealed: string): boolean {
    return sealed.startsWith('v1.');
  }

  #key(purpose: SealPurpose): Buffer {
    const key = this.#keys.get(purpose);
    if (!key) throw new Error(`unknown seal purpose '${purpose}'`);
    return key;
  }
}

const aad = (at: SealContext) => Buffer.from(`keygate/v2|${at.purpose}|${at.row}`, 'utf8');
