/**
 * Files and Skills are GA: called without their beta value they answer in the GA shapes, and the
 * beta value still selects the beta shapes. Sources, read 2026-11-29: the official TypeScript
 * SDK's commit 50fc0dba "Files and Skills APIs are now GA" (2026-08-19: `client.files` and
 * `client.skills` send no beta header and page with `PageCursor`, `{data, next_page}` and `page`;
 * GA `FileMetadata` gains `expires_at`, uploads `expires_in_seconds`; GA `Skill` names its newest
 * version `latest_version_id` where the beta named it `latest_version`; the beta files list paged
 * with `Page`: `after_id`/`before_id` and `{data, has_more, first_id, last_id}`), and the SDK
 * 1.9.0 changelog: "`files-api-2025-04-14` and `skills-2025-10-02` select the beta response
 * shapes".
 */
export const FILES_BETA = 'files-api-2025-04-14';
export const SKILLS_BETA = 'skills-2025-10-02';

/** True when an `anthropic-beta` header (comma-separated values, possibly repeated) names `beta`. */
export function namesBeta(header: string | readonly string[] | undefined, beta: string): boolean {
  const joined = typeof header === 'string' ? header : (header ?? []).join(',');
  return joined.split(',').some((v) => v.trim().toLowerCase() === beta);
}
