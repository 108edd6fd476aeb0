/** The dashboard's response headers; `formAction` adds origins forms may post (or be redirected) to. */
export function securityHeaders(formAction: string[] = []): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self'; form-action ${["'self'", ...formAction].join(' ')}; frame-ancestors 'none'; base-uri 'none'`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  };
}
