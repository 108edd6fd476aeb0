/** The credential a client presented: `Authorization: Bearer …`, else `x-api-key`. */
export function presentedCredential(
  authorization: string | undefined,
  apiKey: string | undefined,
): string | undefined {
  if (authorization) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (m) return m[1];
  }
  return apiKey?.trim() || undefined;
}
