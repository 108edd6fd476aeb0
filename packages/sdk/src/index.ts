import { Keygate } from './client';

export { Keygate, VERSION } from './client';
export { KeygateError, type KeygateErrorCode } from './errors';
export { DEFAULT_BASE_URL, GROUP_HEADER, newGroupId, type KeygateOptions } from './options';
export { UsageTracker, type UsageListener, type UsageTrackerOptions } from './usage-tracker';
export {
  ERROR_CATEGORIES,
  normalizeUsage,
  type CategoryCounts,
  type Endpoint,
  type ErrorCategory,
  type TokenUsage,
  type UsageRecord,
  type UsageSummary,
} from './usage-types';
export {
  runToolLoop,
  type ToolCallContext,
  type ToolCallRecord,
  type ToolHandler,
  type ToolHandlers,
  type ToolLoopOptions,
  type ToolLoopResult,
  type ToolSpec,
  type ZodToolSpec,
} from './tool-loop';
export { verifyWebhook, WEBHOOK_SIGNATURE_HEADER, type VerifyWebhookOptions } from './webhooks';
export {
  pdf,
  PdfError,
  PDF_LIMITS,
  type DocumentBlockOptions,
  type PdfBytes,
  type PdfChunk,
  type PdfErrorCode,
  type PdfInspection,
  type PdfLimitOptions,
  type SplitPdfOptions,
} from './pdf';
export {
  summarizePdf,
  type ChunkSummary,
  type PdfSummary,
  type SummarizePdfOptions,
  type SummaryFormat,
} from './summarize-pdf';
export type { SummarizeProgress } from './summarize-modes';

// The zod the SDK validates tool inputs with, so schemas built with it always match its version.
export { z } from 'zod';

// Everything the official package exports by name (errors, toFile, types…), so imports can move over as a whole.
export * from '@anthropic-ai/sdk';

export default Keygate;
