import { describe, expect, it } from 'vitest';
import { columnsAt, type Table } from './table';

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
