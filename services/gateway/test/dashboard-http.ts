/** The dashboard driven over plain HTTP (no browser): sign-in, pages and form posts as a browser sends them. */
export interface DashboardSession {
  cookie: string;
  csrf: string;
  get(path: string): Promise<Response>;
  post(path: string, form?: Record<string, string>): Promise<Response>;
}

const cookieOf = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith(`${name}=`) && c.length > name.length + 1);

/** Posts the sign-in form with `token`; the answer is not followed. */
export async function postSignIn(base: string, token: string): Promise<Response> {
  const form = await fetch(`${base}/dashboard/sign-in`);
  const html = await form.text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  return fetch(`${base}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: cookieOf(form, 'kg_signin')!,
      'content-type': 'application/x-www-form-urlencoded',
      origin: base,
    },
    body: new URLSearchParams({ _csrf: csrf, token }).toString(),
  });
}

/** Signs in with `token` and returns a session that reads pages and posts forms with its CSRF token. */
export async function dashboardSession(base: string, token: string): Promise<DashboardSession> {
  const res = await postSignIn(base, token);
  const cookie = cookieOf(res, 'kg_session');
  if (res.status !== 303 || !cookie) throw new Error(`sign-in refused: ${res.status} ${await res.text()}`);
  const get = (path: string) => fetch(`${base}${path}`, { redirect: 'manual', headers: { cookie } });
  let csrf = '';
  for (const path of ['/dashboard/settings', '/dashboard']) {
    csrf ||= /name="_csrf" value="([^"]+)"/.exec(await (await get(path)).text())?.[1] ?? '';
  }
  return {
    cookie,
    csrf,
    get,
    post: (path, form = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base },
        body: new URLSearchParams({ _csrf: csrf, ...form }).toString(),
      }),
  };
}
