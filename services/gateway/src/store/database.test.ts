import { describe, expect, it } from 'vitest';
import { driverTarget } from './database';

describe("libpq's connection parameters in a DATABASE_URL's query", () => {
  it('become driver options (a Unix socket directory as host), and leave the URL', () => {
    expect(driverTarget('postgresql://localhost/keygate?host=/var/run/postgresql')).toEqual({
      url: 'postgresql://localhost/keygate',
      options: { host: '/var/run/postgresql' },
    });
    expect(
      driverTarget(
        'postgres://app:secret@db.internal:6432/x?sslmode=require&port=5433&user=kg&dbname=keygate',
      ),
    ).toEqual({
      url: 'postgres://app:secret@db.internal:6432/x?sslmode=require',
      options: { port: 5433, user: 'kg', database: 'keygate' },
    });
  });

  it('refuse a port that is no port number, naming it', () => {
    for (const port of ['abc', '0', '70000', '5432.5'])
      expect(() => driverTarget(`postgresql://localhost/k?port=${port}`)).toThrow(
        `DATABASE_URL: port=${port} is not a port number`,
      );
  });

  it('leave a URL without them exactly as it was, other settings included', () => {
    for (const url of [
      'postgres://postgres@127.0.0.1:5432/test',
      'postgres://u:p%40ss@h/db?sslmode=verify-full&application_name=kg',
    ])
      expect(driverTarget(url)).toEqual({ url, options: {} });
  });
});
