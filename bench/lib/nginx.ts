import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cpuMsOf, statusField, type Arm } from './arms';

export const NGINX = process.env.NGINX_BIN ?? '/usr/sbin/nginx';

/** startNginx where nginx is installed; else null, saying how to install it. */
export async function nginxIfInstalled(...args: Parameters<typeof startNginx>): Promise<Arm | null> {
  if (existsSync(NGINX)) return startNginx(...args);
  console.warn(
    `no nginx at ${NGINX}: its arm is left out (Debian: apt-get install nginx-light; or set NGINX_BIN)`,
  );
  return null;
}

/**
 * The physical limit of a proxy here: Debian's nginx, one worker, a keep-alive upstream pool,
 * answers unbuffered, and the same key swap as the gateway (the one app key in, the provider
 * key out; any other credential gets a 401). It attributes nothing.
 */
export async function startNginx(
  dir: string,
  upstream: string,
  appKey: string,
  providerKey: string,
): Promise<Arm> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 1m;
  map $http_authorization $provider_key { "Bearer ${appKey}" "${providerKey}"; default ""; }
  upstream emulator { server ${new URL(upstream).host}; keepalive 256; }
  server {
    listen 127.0.0.1:${port} reuseport;
    keepalive_requests 1000000;
    location / {
      if ($provider_key = "") { return 401; }
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "";
      proxy_set_header x-api-key $provider_key;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_pass http://emulator;
    }
  }
}
`,
  );
  const master = spawn(NGINX, ['-c', conf, '-p', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const up = await fetch(`${url}/v1/models`).then(
      (r) => r.status === 401,
      () => false,
    );
    if (up) break;
    if (i > 100 || master.exitCode !== null)
      throw new Error(`nginx did not start (${join(dir, 'error.log')})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const worker = Number(
    readFileSync(`/proc/${master.pid}/task/${master.pid}/children`, 'utf8').trim().split(/\s+/)[0],
  );
  return {
    name: 'nginx',
    pid: worker,
    info: { url },
    url,
    rss: () => statusField(worker, 'VmRSS') + statusField(master.pid!, 'VmRSS'),
    resetPeak: () => {
      for (const pid of [worker, master.pid!])
        if (existsSync(`/proc/${pid}/clear_refs`)) writeFileSync(`/proc/${pid}/clear_refs`, '5');
    },
    peak: () => statusField(worker, 'VmHWM') + statusField(master.pid!, 'VmHWM'),
    cpuMs: () => cpuMsOf(worker) + cpuMsOf(master.pid!),
    // One worker process with one thread serves every request.
    mainThreadCpuMs: () => cpuMsOf(worker),
    gc: async () => 0,
    close: () =>
      new Promise((resolve) => {
        if (master.exitCode !== null) return resolve({});
        master.once('exit', () => resolve({}));
        master.kill('SIGQUIT');
      }),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}
