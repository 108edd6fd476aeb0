/** `n` Message Batches requests of a small model, custom ids `{tag}-0`, `{tag}-1`, …, each a little different. */
export const batchRequests = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    custom_id: `${tag}-${i}`,
    params: {
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      messages: [{ role: 'user' as const, content: `Summarise part ${i} of the ${tag} report.` }],
    },
  }));
