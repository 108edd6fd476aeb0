import { claudeCodeBody } from '../lib/claude-code-body';
import { boundJsonNotingLongStrings } from '../../services/gateway/src/pipeline/json-bounds';
import { JsonBody, LONG_STRING } from '../../services/gateway/src/pipeline/json-body';
import { readMessagesBody } from '../../services/gateway/src/proxy/validate';
for (const kb of [150, 600]) {
  const body = claudeCodeBody(kb * 1024);
  const time = async (name: string, fn: () => unknown, n = 400) => {
    for (let i = 0; i < 40; i++) await fn();
    const t = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const u = process.cpuUsage(t);
    console.log(kb, name, ((u.user + u.system) / n / 1000).toFixed(3), 'ms');
  };
  await time('readMessagesBody', () => readMessagesBody(body, { maxPdfPages: 100 }));
  await time('bound', () => boundJsonNotingLongStrings(body, LONG_STRING));
  const ls = await boundJsonNotingLongStrings(body, LONG_STRING);
  await time('parse', () => JsonBody.parse(body, { longStrings: ls }));
  let quotes = 0;
  for (let i = 0; i < body.length; i++) if (body[i] === 0x22) quotes++;
  console.log(kb, 'quotes', quotes, 'long', ls.length / 2);
}
import { fileRefs } from '../../services/gateway/src/surface/file-refs';
{
  const body = claudeCodeBody(600 * 1024);
  const ls = await boundJsonNotingLongStrings(body, LONG_STRING);
  const json = JsonBody.parse(body, { longStrings: ls });
  const t = process.cpuUsage();
  for (let i = 0; i < 1000; i++) fileRefs(json.value, (s) => json.text(s));
  const u = process.cpuUsage(t);
  console.log('fileRefs', ((u.user + u.system) / 1000 / 1000).toFixed(3), 'ms');
  const t2 = process.cpuUsage();
  for (let i = 0; i < 1000; i++) body.indexOf('pdf"'), body.indexOf('\\u');
  const u2 = process.cpuUsage(t2);
  console.log('indexOf x2', ((u2.user + u2.system) / 1000 / 1000).toFixed(3), 'ms');
}
