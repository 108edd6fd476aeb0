import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig } from '../config';
import { StartupError } from '../lib/data-dir';
import { CliError, EXIT, openBackend, type Backend } from './backend';
import { commands, type Command } from './commands';
import { terminalJson, terminalText } from './output';
import { didYouMean, nearest } from './suggest';

const list = (names: string[]) =>
  names.map((name) => `  ${name.padEnd(26)} ${commands[name]!.summary}`).join('\n');

const USAGE = `keygate: the application-key gateway for Anthropic's Messages API

Usage: keygate <command> [options]

${list(Object.keys(commands))}

Every command takes --help; commands that answer with data take --json for scripts.

Where the CLI acts: KEYGATE_URL (+ KEYGATE_OPERATOR_TOKEN) sends every command to that
gateway's operator API; otherwise DATABASE_URL (+ KEYGATE_SECRET, optional KEYGATE_DB_SCHEMA)
or the embedded database in KEYGATE_DATA_DIR (default .keygate; when a gateway is running
on it, the CLI goes through that gateway).

Exit codes:
  0  success
  1  failure (the gateway or database refused or could not be reached; see the message)
  2  usage error: unknown command, bad or missing option, invalid input, bad environment
  3  nothing changed: already in that state (key revoke on a revoked key)
  4  not found: the account, member or key does not exist (or is not in that account)`;

function groupHelp(group: string): string | null {
  const names = Object.keys(commands).filter((n) => n.startsWith(`${group} `));
  return names.length
    ? `Usage: keygate ${group} <${names.map((n) => n.split(' ')[1]).join('|')}> [options]\n\n${list(names)}`
    : null;
}

/** The command nearest to mistyped words (`acount create`, `key craete`), as a sentence, or ''. */
function commandGuess(words: string[]): string {
  const names = Object.keys(commands);
  const first = words[0] ?? '';
  const heads = names.map((n) => n.split(' ')[0]!);
  const head = heads.includes(first) ? first : nearest(first, heads);
  if (head === undefined) return '';
  const subs = names.filter((n) => n.startsWith(`${head} `)).map((n) => n.split(' ')[1]!);
  if (subs.length === 0) return head === first ? '' : ` Did you mean 'keygate ${head}'?`;
  const second = words[1];
  const sub = second === undefined ? undefined : subs.includes(second) ? second : nearest(second, subs);
  if (sub === undefined) return head === first ? '' : ` Did you mean 'keygate ${head}'?`;
  return ` Did you mean 'keygate ${head} ${sub}'?`;
}

/** parseArgs' unknown-option error, said with the command's name and the nearest option. */
function unknownOption(err: unknown, name: string, options: string[]): string | undefined {
  if ((err as { code?: string }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const given = /'(-{1,2}[^']+)'/.exec((err as Error).message)?.[1];
  if (given === undefined) return undefined;
  const bare = given.replace(/^-+/, '').split('=')[0]!;
  const guess = didYouMean(bare, [...options, 'help', 'json'], (o) => `--${o}`);
  return `unknown option '${given}' for 'keygate ${name}'.${guess}`;
}

export async function main(argv: string[]): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const name = [words.slice(0, 2).join(' '), words[0] ?? ''].find((n) => n in commands);
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (!name) {
    const group = words[0] ? groupHelp(words[0]) : null;
    if (argv.length === 0 || (wantsHelp && words.length <= 1)) {
      process.stdout.write(`${group ?? USAGE}\n`);
      return EXIT.ok;
    }
    process.stderr.write(
      `Unknown command: ${terminalText(words.join(' '))}.${terminalText(commandGuess(words))}\n\n${group ?? USAGE}\n`,
    );
    return EXIT.usage;
  }
  const command: Command = commands[name]!;
  const rest = argv.slice(argv.indexOf(name.split(' ').at(-1)!) + 1);
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = {
      ...command.options,
      help: { type: 'boolean', short: 'h' },
      json: { type: 'boolean' },
    } as ParseArgsConfig['options'];
    const parsed = parseArgs({ args: rest, options, strict: true, allowPositionals: !!command.positional });
    values = parsed.values as typeof values;
    if (parsed.positionals.length > 1)
      throw new Error(`one ${command.positional} only, got: ${parsed.positionals.join(' ')}`);
    if (command.positional && parsed.positionals[0] !== undefined) {
      if (values[command.positional] !== undefined)
        throw new Error(`give the ${command.positional} once, as an argument or as --${command.positional}`);
      values[command.positional] = parsed.positionals[0];
    }
  } catch (err) {
    const message = unknownOption(err, name, Object.keys(command.options)) ?? (err as Error).message;
    process.stderr.write(`keygate: ${terminalText(message)}\n\n${command.usage}\n`);
    return EXIT.usage;
  }
  if (values.help) {
    process.stdout.write(`${command.usage}\n`);
    return EXIT.ok;
  }
  let backend: Backend | null = null;
  try {
    const config = loadConfig();
    if (command.run) return await command.run(values, config);
    backend = await openBackend(config);
    const result = await command.call!(values, backend);
    process.stdout.write(`${values.json ? terminalJson(result.json) : terminalText(result.text)}\n`);
    return result.exitCode ?? EXIT.ok;
  } catch (err) {
    if (err instanceof ConfigError || err instanceof CliError || err instanceof StartupError) {
      process.stderr.write(`keygate: ${terminalText(err.message)}\n`);
      return err instanceof CliError ? err.exitCode : err instanceof ConfigError ? EXIT.usage : EXIT.failure;
    }
    process.stderr.write(`keygate: ${terminalText(String((err as Error).stack ?? err))}\n`);
    return EXIT.failure;
  } finally {
    await backend?.close();
  }
}
