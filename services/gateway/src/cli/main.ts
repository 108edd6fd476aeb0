import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig } from '../config';
import { openBackend, CliError, type Backend } from './backend';
import { commands, type Command } from './commands';

const USAGE = `keygate: the application-key gateway for Anthropic's Messages API

Usage: keygate <command> [options]

${Object.entries(commands)
  .map(([name, c]) => `  ${name.padEnd(20)} ${c.summary}`)
  .join('\n')}

Every command takes --help. Configuration comes from the environment (DATABASE_URL,
KEYGATE_DATA_DIR, KEYGATE_SECRET, …); see the README.`;

export async function main(argv: string[]): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const name = [words.slice(0, 2).join(' '), words[0] ?? ''].find((n) => n in commands);
  if (!name) {
    const wantedHelp = argv.length === 0 || argv.includes('--help') || argv.includes('-h');
    (wantedHelp ? process.stdout : process.stderr).write(`${wantedHelp ? '' : `Unknown command: ${words.join(' ')}\n\n`}${USAGE}\n`);
    return wantedHelp ? 0 : 2;
  }
  const command: Command = commands[name]!;
  const rest = argv.slice(argv.indexOf(name.split(' ').at(-1)!) + 1);
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = { ...command.options, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } } as ParseArgsConfig['options'];
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values as typeof values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${command.usage}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  let backend: Backend | null = null;
  try {
    const config = loadConfig();
    if (command.run) return await command.run(values, config);
    backend = await openBackend(config);
    const result = await command.call!(values, backend);
    process.stdout.write(`${values.json ? JSON.stringify(result.json, null, 2) : result.text}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError || err instanceof CliError) {
      process.stderr.write(`keygate: ${err.message}\n`);
      return err instanceof CliError ? err.exitCode : 78;
    }
    process.stderr.write(`keygate: ${(err as Error).stack ?? err}\n`);
    return 1;
  } finally {
    await backend?.close();
  }
}
