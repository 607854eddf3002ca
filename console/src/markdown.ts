import DOMPurify from 'dompurify';
import { Marked } from 'marked';

/**
 * Markdown from agents, repositories and LLMs, made safe to put in the page: `marked` turns it into
 * HTML (raw HTML in the source stays HTML) and DOMPurify removes everything that can run or call
 * out (scripts, event handlers, `javascript:` URLs, forms, frames, styles). The result is the only
 * HTML this console ever inserts as HTML; everything else is text. Images stay, but the page's
 * Content-Security-Policy loads only those from this origin or `data:`.
 */
const marked = new Marked({ gfm: true, breaks: true, async: false });

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  // Links open elsewhere, without this page as their opener or referrer.
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

/**
 * Sanitized HTML for `dangerouslySetInnerHTML`. Under the page's Trusted Types policy it is a
 * `TrustedHTML` made by DOMPurify's policy, the only one the page allows: any other string put into
 * an HTML sink throws. (Typed as a string for preact, which passes it to `innerHTML` as it is.)
 */
export function renderMarkdown(source: string): string {
  const html = marked.parse(source) as string;
  return purify.sanitize(html, {
    RETURN_TRUSTED_TYPE: true,
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'],
    FORBID_ATTR: ['style', 'id', 'name', 'srcset'],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|data:image\/(?:png|gif|jpeg|webp);)/i,
  }) as unknown as string;
}
