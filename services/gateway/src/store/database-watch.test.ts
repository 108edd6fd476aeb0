import { describe, expect, it } from 'vitest';
import { DatabaseWatch } from './database-watch';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('DatabaseWatch', () => {
  const watch = () => {
    const changes: string[] = [];
    const w = new DatabaseWatch({ clock: () => 0, retryMs: 500, onChange: (state) => changes.push(state) });
    return { w, changes };
  };

  it('one outage is one down and one up, however the overlapping reads end', () => {
    const { w, changes } = watch();
    const beforeOutage = w.epoch; // a read begun while the database answered …
    const first = w.epoch;
    expect(w.failed(refused, first)).toBe(true); // … another read of that time fails: down
    expect(w.answered(beforeOutage)).toBe(false); // the early read succeeds late: not back
    expect(w.down).toBe(true);
    const retry = w.epoch; // the retry, begun during the outage
    const lateFailure = w.epoch;
    expect(w.answered(retry)).toBe(true); // back
    expect(w.failed(refused, lateFailure)).toBe(true); // a read begun in the outage fails late: still served from memory
    expect(w.down).toBe(false);
    expect(changes).toEqual(['down', 'up']);
  });

  it('a read begun after it came back that fails starts a new outage', () => {
    const { w, changes } = watch();
    w.failed(refused, w.epoch);
    w.answered(w.epoch);
    expect(w.failed(refused, w.epoch)).toBe(true);
    expect(changes).toEqual(['down', 'up', 'down']);
  });

  it('an error that is not the database being away changes nothing', () => {
    const { w, changes } = watch();
    expect(w.failed(new Error('syntax error'), w.epoch)).toBe(false);
    expect(w.down).toBe(false);
    expect(changes).toEqual([]);
  });
});
