import { describe, expect, it } from 'vitest';
import { eqFilter, ScimError } from './scim-json';

describe('eqFilter (RFC 7644 §3.4.2.2, the one filter providers send)', () => {
  it('reads `attr eq "value"`, attribute and operator in any case, quotes unescaped', () => {
    expect(eqFilter('userName eq "ann@acme.test"', 'userName')).toBe('ann@acme.test');
    expect(eqFilter('USERNAME EQ "a\\"b"', 'userName')).toBe('a"b');
    expect(eqFilter(undefined, 'userName')).toBeNull();
  });

  it('refuses any other filter with scimType invalidFilter', () => {
    for (const f of [
      'userName co "a"',
      'emails eq "a"',
      'userName eq a',
      'userName eq "a" or active eq true',
    ]) {
      const err = (() => {
        try {
          eqFilter(f, 'userName');
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ScimError);
      expect((err as ScimError).json()).toEqual({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        scimType: 'invalidFilter',
        detail: 'Only the filter \'userName eq "…"\' is supported.',
        status: '400',
      });
    }
  });
});
