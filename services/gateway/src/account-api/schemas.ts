import { z } from 'zod';

/** A display name: of an account, a member or a key. */
export const name = z.string().trim().min(1).max(200);
