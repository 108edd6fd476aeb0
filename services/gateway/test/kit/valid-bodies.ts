/**
 * Bodies that pass validation, by the end of a route's path: a refusal of another account's
 * object (in the path or in the body) is then the ownership check's, not the schema's.
 */
export const VALID_UPDATE: Record<string, object> = {
  '/users/:id': { name: 'Renamed' },
  '/api_keys/:id': { name: 'Renamed' },
  '/budgets/:id': { limit_cents: 200 },
  '/webhooks/:id': { events: ['billing.notice'] },
  '/rbac_groups/:id': { name: 'Renamed' },
  '/rbac_groups/:id/members': { user_id: 'user_x' },
  '/service_accounts/:id': { description: 'x' },
  '/federation_issuers/:id': { check_jti: true },
  '/federation_rules/:id': { description: 'x' },
  '/spend_limit_increase_requests/:id/approve': { amount: '1' },
};

/** More of them: writes whose body names an object (ACCOUNT_BODY_REFS), the dashboard's key forms, SCIM patches. */
const VALID_WRITE: Record<string, object> = {
  ...VALID_UPDATE,
  '/api_keys': { name: 'x' },
  '/budgets': { scope: 'user', limit_cents: 100 },
  '/invites': { email: 'invitee@example.com', role: 'developer' },
  '/model_policies': { scope: { type: 'user' }, allowed_models: ['claude-haiku-*'], max_tokens: null },
  '/spend_limits': { scope: { type: 'user' }, amount: '10' },
  '/rate_limits': { scope: { type: 'user' }, limits: [{ type: 'requests_per_minute', value: 100 }] },
  '/v1/messages': { model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
  '/v1/messages/count_tokens': { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] },
  '/invoke': {
    anthropic_version: 'bedrock-2023-05-31',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'hi' }],
  },
  '/invoke-with-response-stream': {
    anthropic_version: 'bedrock-2023-05-31',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'hi' }],
  },
  '/models/:model': {
    anthropic_version: 'vertex-2023-10-16',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'hi' }],
  },
  '/v1/messages/batches': {
    requests: [
      {
        custom_id: 'one',
        params: { model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      },
    ],
  },
  '/keys/:id/rotate': { grace_period_seconds: '0' },
  '/keys/:id/streams': { resumable_streams: 'on' },
  '/Users/:id': {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'replace', path: 'active', value: true }],
  },
  '/Groups/:id': {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'replace', path: 'displayName', value: 'x' }],
  },
};

/** The valid body of the route at `path`, if one is known. */
export const validBody = (path: string): Record<string, unknown> | undefined => {
  const found = Object.entries(VALID_WRITE).find(([p]) => path.endsWith(p))?.[1];
  return found ? (structuredClone(found) as Record<string, unknown>) : undefined;
};
