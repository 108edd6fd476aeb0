import { accountCommands } from './account-commands';
import { backupCommands } from './backup-commands';
import { billingCommands } from './billing-commands';
import { claudeCodeCommands } from './claude-code-commands';
import type { Command } from './command';
import { federationCommands } from './federation-commands';
import { idpCommands } from './idp-commands';
import { keyCommands } from './key-commands';
import { limitCommands } from './limit-commands';
import { memberCommands } from './member-commands';
import { policyCommands } from './policy-commands';
import { priceCommands } from './price-commands';
import { serverCommands } from './server-commands';
import { statuslineCommand } from './statusline-command';
import { tokenCommand } from './token-command';
import { upstreamCommands } from './upstream-commands';
import { usageCommand } from './usage-command';

export type { Command } from './command';

export const commands: Record<string, Command> = {
  ...serverCommands,
  ...backupCommands,
  ...accountCommands,
  ...memberCommands,
  ...keyCommands,
  ...limitCommands,
  ...policyCommands,
  ...billingCommands,
  ...priceCommands,
  ...idpCommands,
  ...federationCommands,
  ...upstreamCommands,
  ...claudeCodeCommands,
  usage: usageCommand,
  token: tokenCommand,
  statusline: statuslineCommand,
};
