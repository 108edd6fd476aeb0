import { describe, expect, it } from 'vitest';
import { generateKey } from '../auth/keys';
import { BoundedLabel, errorCategory, OTHER } from './labels';

describe('bounded labels', () => {
  it('keeps the first values up to the cap, then counts the rest as other', () => {
    const label = new BoundedLabel(2);
    expect(['a', 'b', 'c', 'a', 'd', 'b'].map((v) => label.value(v))).toEqual([
      'a',
      'b',
      OTHER,
      'a',
      OTHER,
      'b',
    ]);
  });

  it('never takes a value shaped like a secret or unfit for a label, and names a missing one', () => {
    const label = new BoundedLabel(100);
    expect(label.value(generateKey('live'))).toBe(OTHER);
    expect(label.value(`sk-ant-api03-${'x'.repeat(30)}`)).toBe(OTHER);
    expect(label.value('model with spaces')).toBe(OTHER);
    expect(label.value('x'.repeat(101))).toBe(OTHER);
    expect(label.value(null)).toBe('none');
    expect(label.value('claude-opus-4-5-20251101')).toBe('claude-opus-4-5-20251101');
  });
});

describe('error categories', () => {
  it.each([
    [200, null, null],
    [429, 'rate_limit_error', 'rate_limit'],
    [529, 'overloaded_error', 'overloaded'],
    [200, 'overloaded_error', 'overloaded'],
    [504, 'timeout_error', 'timeout'],
    [408, 'timeout_error', 'timeout'],
    [200, 'malformed_tool_call', 'malformed_tool_call'],
    [502, 'api_error', 'upstream_error'],
    [500, 'api_error', 'upstream_error'],
    [499, 'client_closed', 'client_gone'],
    [200, 'shutdown', 'shutdown'],
    [400, 'invalid_request_error', 'refused'],
    [401, 'authentication_error', 'refused'],
    [413, 'request_too_large', 'refused'],
  ] as const)('%i %s → %s', (status, errorType, category) => {
    expect(errorCategory({ status, errorType })).toBe(category);
  });
});
