import { LogFormatter, LogItem, Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { redact } from '#shared/http/redact.ts';

/** Powertools' JSON shape, with every secret-named attribute masked before the line is written. */
class RedactingFormatter extends LogFormatter {
  formatAttributes(a: UnformattedAttributes, additional: LogAttributes): LogItem {
    return new LogItem({
      attributes: {
        level: a.logLevel,
        message: a.message,
        timestamp: this.formatTimestamp(a.timestamp),
        service: a.serviceName,
        cold_start: a.lambdaContext?.coldStart,
        function_name: a.lambdaContext?.functionName,
        function_request_id: a.lambdaContext?.awsRequestId,
        xray_trace_id: a.xRayTraceId,
      },
    }).addAttributes(redact(additional) as LogAttributes);
  }
}

export const logger = new Logger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'agent-conversation-service',
  logFormatter: new RedactingFormatter(),
});
