import { startCloudEmulator, type CloudEmulator } from '@keygate/emulator';
import { expect } from 'vitest';
import type { upstreamSuite } from './upstream-suite';

export const AWS = {
  accessKeyId: 'AKIDKEYGATEBATCH001',
  secretAccessKey: 'aws-batch-secret-0123456789abcdefgh',
  region: 'us-west-2',
};
export const WORKSPACE = 'wrkspc_batches01';
const OTHER_KEY = 'aws-other-workspace-key-0123456789';

/** A cloud emulator playing an upstream, and the id the account gave it. */
export interface AddedUpstream {
  cloud: CloudEmulator;
  id: string;
}

/**
 * Claude Platform on AWS upstreams added to an upstream suite's account, after its others: one
 * signing with SigV4 in its workspace, others each with a workspace key of its own (where nothing
 * of an object made on another may go).
 */
export function awsUpstreams({ suite, op }: ReturnType<typeof upstreamSuite>) {
  async function added(cloud: CloudEmulator, body: Record<string, unknown>): Promise<AddedUpstream> {
    suite.clouds.push(cloud);
    const res = await op('/upstreams', { kind: 'aws', base_url: cloud.baseUrl, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return { cloud, id: res.body.id };
  }
  return {
    /** Signs with SigV4; `batchMs`: how long its batches stay in progress. */
    async sigv4(batchMs?: number): Promise<AddedUpstream> {
      const cloud = await startCloudEmulator({
        kind: 'aws',
        auth: { type: 'sigv4', ...AWS, service: 'aws-external-anthropic' },
        workspaceId: WORKSPACE,
        ...(batchMs ? { batchMs } : {}),
      });
      return added(cloud, {
        auth: 'sigv4',
        credential: `${AWS.accessKeyId}:${AWS.secretAccessKey}`,
        region: AWS.region,
        workspace_id: WORKSPACE,
      });
    },
    /** A workspace key of its own as Bearer, in workspace `wrkspc_{name}01`. */
    async bearer(name = 'other'): Promise<AddedUpstream> {
      const token = name === 'other' ? OTHER_KEY : `aws-${name}-workspace-key-0123456789`;
      const workspaceId = `wrkspc_${name}01`;
      const cloud = await startCloudEmulator({ kind: 'aws', auth: { type: 'bearer', token }, workspaceId });
      return added(cloud, { auth: 'bearer', credential: token, workspace_id: workspaceId });
    },
  };
}
