import { describe, expect, it } from 'vitest';
import { columnsAt, csvField, type Table } from './table';

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

describe('columnsAt', () => {
  it('moves the named columns to a position in the header, every row and the footer alike', () => {
    const t: Table = {
      id: 't',
      caption: 'T',
      columns: ['Group', 'Input', 'Output', 'Cost', 'Requests'].map((label) => ({ label })),
      rows: [['g1', '1', '2', '0.5', '3']],
      foot: ['Total', '1', '2', '0.5', '3'],
    };
    const moved = columnsAt(t, ['Cost', 'Requests', 'Absent'], 1);
    expect(moved.columns.map((c) => c.label)).toEqual(['Group', 'Cost', 'Requests', 'Input', 'Output']);
    expect(moved.rows).toEqual([['g1', '0.5', '3', '1', '2']]);
    expect(moved.foot).toEqual(['Total', '0.5', '3', '1', '2']);
    expect(columnsAt({ ...t, foot: undefined }, ['Cost'], 1).foot).toBeUndefined();
  });
});
