import { describe, expect, it } from 'vitest';
import { csvField } from './table';

describe('CSV cells', () => {
  it.each([
    ['=HYPERLINK("https://evil.example","x")', `"'=HYPERLINK(""https://evil.example"",""x"")"`],
    ['+1+cmd', "'+1+cmd"],
    ['-2+3', "'-2+3"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\t=1', "'\t=1"],
    ['\r=1', `"'\r=1"`],
    ['=1,2', `"'=1,2"`],
  ])('neutralises a formula: %j', (cell, expected) => {
    expect(csvField(cell)).toBe(expected);
  });

  it.each(['-12.5', '-1234', '+3', '-0.5%', 'claude-sonnet-4-5', 'plain', ''])(
    'keeps %j as it is',
    (cell) => {
      expect(csvField(cell)).toBe(cell);
    },
  );

  it('quotes commas, quotes and line ends', () => {
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
  });
});
