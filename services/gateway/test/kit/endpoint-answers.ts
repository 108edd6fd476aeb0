import type { Endpoint, Face } from '../../src/pipeline/endpoint-row';
import { endpointKey } from '../../src/pipeline/endpoint-row';

/** One generated case: the row, what it checks, what is sent, and the status it must answer (else any but 500). */
export interface Case {
  row: Endpoint;
  name: string;
  sent: { method: string; path: string; headers: Record<string, string>; body?: string | Buffer };
  expect?: number;
}

export interface Answer extends Case {
  status: number;
  contentType: string;
  text: string;
  requestId: string | null;
}

/** How long a case may wait for its answer (a route that hangs on a stopped database fails). */
const ANSWER_MS = 20_000;

/** Sends every case, `parallel` at a time, and keeps each answer. */
export async function runCases(base: string, cases: readonly Case[], parallel: number): Promise<Answer[]> {
  const answers: Answer[] = new Array(cases.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < cases.length; i = next++) {
      const c = cases[i]!;
      const res = await fetch(base + c.sent.path, {
        method: c.sent.method,
        headers: c.sent.headers,
        redirect: 'manual',
        signal: AbortSignal.timeout(ANSWER_MS),
        ...(c.sent.body !== undefined ? { body: c.sent.body } : {}),
      }).catch((error: Error) => error);
      if (res instanceof Error) {
        answers[i] = { ...c, status: 0, contentType: '', text: `no answer: ${res.message}`, requestId: null };
        continue;
      }
      answers[i] = {
        ...c,
        status: res.status,
        contentType: res.headers.get('content-type') ?? '',
        text: await res.text(),
        // A relayed answer carries the provider's request-id; Keygate's own is keygate-request-id.
        requestId: res.headers.get('keygate-request-id') ?? res.headers.get('request-id'),
      };
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return answers;
}

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** What is wrong with an error answer in `face`'s shape: nothing, or why. */
export function faceProblem(face: Face, status: number, contentType: string, text: string): string | null {
  if (status < 400) return null;
  if (face === 'page') return /^text\/html/.test(contentType) ? null : `not a page (${contentType})`;
  if (face === 'probe') return null;
  let body: Record<string, any>;
  try {
    body = JSON.parse(text);
  } catch {
    return `not JSON: ${text.slice(0, 120)}`;
  }
  if (face === 'oauth')
    return typeof body.error === 'string' ? null : `not an OAuth error: ${text.slice(0, 160)}`;
  if (face === 'bedrock')
    return typeof body.message === 'string' && Object.keys(body).length === 1
      ? null
      : `not a Bedrock error: ${text.slice(0, 160)}`;
  if (face === 'scim')
    return body.schemas?.includes(SCIM_ERROR) && String(body.status) === String(status)
      ? null
      : `not a SCIM error: ${text.slice(0, 160)}`;
  return body.type === 'error' &&
    typeof body.error?.type === 'string' &&
    typeof body.error?.message === 'string'
    ? null
    : `not the provider's error: ${text.slice(0, 160)}`;
}

/** Why an answer breaks its row's guarantees, as lines naming the row and the case. */
export function answerShape(a: Answer): string[] {
  const where = `${endpointKey(a.row)} (${a.name}) → ${a.status}`;
  const problems: string[] = [];
  if (a.status === 0 || (a.status >= 500 && a.status !== 502 && a.status !== 503 && a.status !== 504))
    problems.push(`${where}: ${a.text.slice(0, 200)}`);
  if (a.expect !== undefined && a.status !== a.expect)
    problems.push(`${where}: expected ${a.expect}: ${a.text.slice(0, 200)}`);
  const shape = faceProblem(a.row.face, a.status, a.contentType, a.text);
  if (shape) problems.push(`${where}: ${shape}`);
  return problems;
}
