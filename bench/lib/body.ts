/** The 1 KB Messages request the profile, the guard and the workers run send. */
export const BODY_1K = JSON.stringify({
  model: 'claude-opus-4-5',
  max_tokens: 256,
  messages: [{ role: 'user', content: 'the quick brown fox '.repeat(45) }],
});
