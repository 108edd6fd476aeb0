/** One server-sent event as a client reads it. */
export interface ReadEvent {
  id: string | null;
  event: string;
  data: string;
}

/** The events and comment lines of an SSE body (whole events only). */
export function parseSse(text: string): { events: ReadEvent[]; comments: string[] } {
  const events: ReadEvent[] = [];
  const comments: string[] = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    let id: string | null = null;
    let event = '';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments.push(line);
      else if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trim());
    }
    if (event !== '' || data.length > 0) events.push({ id, event, data: data.join('\n') });
  }
  return { events, comments };
}

/**
 * Reads a streamed answer until `stop` says so (given the whole events so far), then drops the
 * connection; or to its end. Returns the text read, up to the last whole event.
 */
export async function readStream(res: Response, stop?: (events: ReadEvent[]) => boolean): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const chunk = await reader.read().catch(() => null);
    if (chunk === null || chunk.done) return text;
    text += decoder.decode(chunk.value, { stream: true });
    const whole = text.slice(0, text.lastIndexOf('\n\n') + 2);
    if (stop?.(parseSse(whole).events)) {
      await reader.cancel();
      return whole;
    }
  }
}
