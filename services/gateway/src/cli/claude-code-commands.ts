import { CliError, EXIT, type Json } from './backend';
import { accountPath, type Command } from './command';
import { details } from './output';

const shown = (p: Json) => {
  const env = p.env as Record<string, string>;
  return Object.keys(env).length ? details(env) : '(none)';
};

export const claudeCodeCommands: Record<string, Command> = {
  'claude-code env': {
    summary: "Show or replace the environment pushed to members' Claude Code through the gateway sign-in",
    usage: `Usage: keygate claude-code env --account ID [--set NAME=VALUE]... [--clear] [--json]

Members who sign in with Claude Code's /login at <gateway>/claude/<account id> receive these
variables in their managed settings, on top of the telemetry variables Keygate sets there.
--set replaces the whole list with the given variables; --clear removes them all.`,
    options: {
      account: { type: 'string' },
      set: { type: 'string', multiple: true },
      clear: { type: 'boolean' },
    },
    async call(values, backend) {
      const path = `${accountPath(values, this.usage)}/claude_code_env`;
      const pairs = Array.isArray(values.set) ? values.set.filter((s) => typeof s === 'string') : [];
      if (pairs.length === 0 && values.clear !== true) {
        const p = await backend.request('GET', path);
        return { json: p, text: shown(p) };
      }
      if (pairs.length > 0 && values.clear === true)
        throw new CliError('--set and --clear: give one of them.', EXIT.usage);
      const env: Record<string, string> = {};
      for (const pair of pairs) {
        const at = pair.indexOf('=');
        if (at < 1) throw new CliError(`--set ${pair}: write NAME=VALUE.\n\n${this.usage}`, EXIT.usage);
        env[pair.slice(0, at)] = pair.slice(at + 1);
      }
      const p = await backend.request('POST', path, { body: { env } });
      return { json: p, text: `Claude Code environment saved.\n${shown(p)}` };
    },
  },
};
